"""Lambda SnapStart runtime hooks, for the functions the template's SnapStart parameter applies to.

Before the snapshot: import what a first request would import lazily, so a restored environment has
it. Nothing that holds a connection or a credential is made then (the model client opens its first
connection on a request). After a restore, what must not be shared by the environments restored from
one snapshot is made afresh: the boto3 session and clients (credentials, connections) and the
`random` seed (retry jitter). IDs and tokens draw on os.urandom, which a restore does not repeat.
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Iterable

from rag_orchestrator.aws import AwsClients

# What any function's first request imports lazily: the AWS clients and the store.
FIRST_REQUEST = ("boto3", "botocore.client", "rag_orchestrator.conversations.dynamo")


def warm(modules: Iterable[str]) -> None:
    """Import `modules` (the before-snapshot hook)."""
    for name in modules:
        importlib.import_module(name)


def refresh(aws: AwsClients) -> None:
    """The after-restore hook: no session, client, connection or random state from the snapshot."""
    aws.reset()
    random.seed()


def register(aws: AwsClients, modules: Iterable[str] = ()) -> bool:
    """Register both hooks with Lambda's runtime, the root's AWS clients to be made afresh after a
    restore; False where it has none (anywhere but Lambda)."""
    try:
        from snapshot_restore_py import (  # type: ignore[import-not-found]  # in Lambda's runtime only
            register_after_restore,
            register_before_snapshot,
        )
    except ImportError:
        return False
    register_before_snapshot(warm, [*FIRST_REQUEST, *modules])
    register_after_restore(refresh, aws)
    return True
