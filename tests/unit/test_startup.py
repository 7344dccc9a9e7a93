"""frozen_start(): GC off while a function's app module loads, its objects frozen after."""

from __future__ import annotations

import gc

import pytest

from rag_orchestrator.startup import frozen_start


@pytest.fixture(autouse=True)
def collector():
    """Each test starts with the collector on and leaves nothing frozen behind."""
    gc.enable()
    yield
    gc.unfreeze()
    gc.enable()


def _scanned(obj: object) -> bool:
    """Whether a collection would still scan `obj` (a frozen object is in no generation)."""
    return any(o is obj for o in gc.get_objects())


def test_gc_is_off_while_building_and_what_was_built_is_frozen():
    with frozen_start():
        assert not gc.isenabled()
        built = {"schema": [1, 2]}
        assert _scanned(built)
    assert gc.isenabled()
    assert not _scanned(built)
    assert gc.get_freeze_count() > 0


def test_a_collector_the_process_turned_off_stays_off():
    gc.disable()
    with frozen_start():
        pass
    assert not gc.isenabled()


def test_a_failed_start_turns_the_collector_back_on():
    with pytest.raises(RuntimeError), frozen_start():
        raise RuntimeError("a bad setting")
    assert gc.isenabled()
