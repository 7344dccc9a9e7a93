"""SnapStart runtime hooks: registered with the runtime's library, warming imports, refreshing state."""

from __future__ import annotations

import random
import sys
import types

import pytest

from rag_orchestrator.api import snapstart
from rag_orchestrator.aws import AwsClients


@pytest.fixture
def runtime(monkeypatch):
    """Lambda's snapshot_restore_py as the managed runtime provides it: it records what is registered."""
    registered: dict[str, list] = {"before": [], "after": []}
    library = types.ModuleType("snapshot_restore_py")
    library.register_before_snapshot = lambda fn, *args: registered["before"].append((fn, args))
    library.register_after_restore = lambda fn, *args: registered["after"].append((fn, args))
    monkeypatch.setitem(sys.modules, "snapshot_restore_py", library)
    return registered


def test_without_the_runtime_library_nothing_is_registered(monkeypatch):
    monkeypatch.setitem(sys.modules, "snapshot_restore_py", None)  # import fails, as off Lambda
    assert snapstart.register(AwsClients()) is False


def test_the_hooks_are_registered_with_what_a_first_request_imports(runtime):
    aws = AwsClients()
    assert snapstart.register(aws, ["json"]) is True
    [(before, args)] = runtime["before"]
    [(after, after_args)] = runtime["after"]
    assert before is snapstart.warm and after is snapstart.refresh
    assert list(args[0]) == [*snapstart.FIRST_REQUEST, "json"]
    assert after_args == (aws,)  # the root's clients, made afresh after a restore


def test_warming_imports_the_modules(monkeypatch):
    monkeypatch.delitem(sys.modules, "rag_orchestrator.conversations.dynamo", raising=False)
    snapstart.warm(snapstart.FIRST_REQUEST)
    assert all(name in sys.modules for name in snapstart.FIRST_REQUEST)


def test_a_restore_makes_sessions_clients_and_seeds_afresh(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    aws = AwsClients()
    client = aws.client("dynamodb")
    random.seed(7)
    snapshotted = random.random()
    random.seed(7)

    snapstart.refresh(aws)

    assert aws.made == 0 and aws.client("dynamodb") is not client
    assert random.random() != snapshotted  # every restored environment draws its own sequence
