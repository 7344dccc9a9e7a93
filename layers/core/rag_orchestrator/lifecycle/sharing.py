"""Shares of a conversation (docs/privacy.md): a read-only snapshot as of sharing, readable without auth.

    PK=SHARE#<shareId>  SK=META            shareId, conversationId, callerId, createdAt, snapshotKey
    PK=CONV#<id>        SK=SHARE#<shareId>  the pointer deleting or erasing the conversation follows
    s3://TRANSCRIPTS_BUCKET/shares/<shareId>.json   the snapshot: title, messages, sources

Revoking removes the item, the snapshot's every version, then the pointer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rag_orchestrator.conversations import items as it
from rag_orchestrator.conversations.s3_objects import ObjectStore
from rag_orchestrator.conversations.table import Table
from rag_orchestrator.lifecycle.conversation_erasure import SHARE_POINTER, RevokeShares

SHARE_PREFIX = "SHARE#"


def snapshot_key(share_id: str) -> str:
    return f"shares/{share_id}.json"


def share_key(share_id: str) -> dict[str, Any]:
    return it.to_attributes({"PK": SHARE_PREFIX + share_id, "SK": it.META})


def revoke(table: Table, objects: ObjectStore, pointers: Sequence[dict[str, Any]]) -> tuple[int, int]:
    """Every share the pointers name, gone; the items and objects removed."""
    removed_objects = 0
    for pointer in pointers:
        share_id = str(pointer["SK"]).removeprefix(SHARE_POINTER)
        table.call("delete_item", Key=share_key(share_id))
        removed_objects += objects.delete_versions(snapshot_key(share_id), exact=True)
    table.batch_delete([it.to_attributes({"PK": p["PK"], "SK": p["SK"]}) for p in pointers])
    return 2 * len(pointers), removed_objects


def revoker(table: Table, objects: ObjectStore) -> RevokeShares:
    return lambda pointers: revoke(table, objects, pointers)
