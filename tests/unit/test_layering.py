"""The core package's layering: shared concepts at the bottom, no import running up, no cycle."""

from devserver.import_graph import (
    LAYERS,
    find_cycles,
    inside_packages,
    layer_of,
    module_cycles,
    mutual,
    package_cycles,
    package_graph,
    upward,
)


def test_every_package_sits_in_a_layer():
    for package in package_graph():
        assert layer_of(package) < len(LAYERS)


def test_no_import_runs_up_and_no_two_packages_import_each_other():
    graph = package_graph()
    assert upward(graph) == []
    assert mutual(graph) == []


def test_no_two_modules_import_each_other_when_they_load():
    assert module_cycles() == []


def test_no_modules_of_a_package_import_each_other_even_deferred():
    """A cycle closed by an import inside a function or under `if TYPE_CHECKING:` is still one: the
    modules cannot be understood, or moved, apart."""
    assert package_cycles() == []


def test_the_check_sees_an_upward_import():
    assert upward({"domain": {"api"}, "api": {"domain"}}) == [("domain", "api")]
    assert mutual({"providers": {"retrieval"}, "retrieval": {"providers"}}) == [("providers", "retrieval")]
    assert find_cycles({"loop.ports": {"loop.record"}, "loop.record": {"loop.ports"}}) == [
        ["loop.ports", "loop.record"]
    ]


def test_the_check_sees_a_cycle_inside_a_package_and_not_one_across_packages():
    graph = {
        "rag_orchestrator.loop.turn": {"rag_orchestrator.loop.turn_start", "rag_orchestrator.domain.events"},
        "rag_orchestrator.loop.turn_start": {"rag_orchestrator.loop.turn"},  # under TYPE_CHECKING, say
        "rag_orchestrator.domain.events": set(),
    }
    assert find_cycles(inside_packages(graph)) == [
        ["rag_orchestrator.loop.turn", "rag_orchestrator.loop.turn_start"]
    ]
    assert inside_packages(graph)["rag_orchestrator.loop.turn"] == {"rag_orchestrator.loop.turn_start"}
