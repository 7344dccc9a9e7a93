"""The core package's layering: shared concepts at the bottom, no import running up, no cycle."""

from devserver.import_graph import LAYERS, find_cycles, layer_of, module_cycles, mutual, package_graph, upward


def test_every_package_sits_in_a_layer():
    for package in package_graph():
        assert layer_of(package) < len(LAYERS)


def test_no_import_runs_up_and_no_two_packages_import_each_other():
    graph = package_graph()
    assert upward(graph) == []
    assert mutual(graph) == []


def test_no_two_modules_import_each_other_when_they_load():
    assert module_cycles() == []


def test_the_check_sees_an_upward_import():
    assert upward({"domain": {"api"}, "api": {"domain"}}) == [("domain", "api")]
    assert mutual({"providers": {"retrieval"}, "retrieval": {"providers"}}) == [("providers", "retrieval")]
    assert find_cycles({"loop.ports": {"loop.record"}, "loop.record": {"loop.ports"}}) == [
        ["loop.ports", "loop.record"]
    ]
