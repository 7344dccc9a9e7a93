"""Shares of a conversation (docs/privacy.md): a read-only snapshot as of sharing, readable without auth.

    PK=SHARE#<shareId>  SK=META             shareId, conversationId, createdAt, snapshotKey (no caller id)
    PK=CONV#<id>        SK=SHARE#<shareId>  the pointer: deleting or erasing the conversation follows it
    s3://TRANSCRIPTS_BUCKET/contents/<conversationId>/shares/<shareId>.json   the snapshot

The snapshot holds the title and the messages a reader of the conversation sees (user and assistant,
latest versions) with the sources each answer cites: no metadata, attachment, tool call, reasoning or
caller id. It lives under the conversation's content prefix, so a purge removes it with the rest.
Reading checks that the conversation is still there and not deleted: a share of a deleted conversation
is a 404 even before its items are removed. Revoking removes the item, the snapshot, then the pointer.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rag_orchestrator.conversations import items as it
from rag_orchestrator.conversations.contents import content_prefix
from rag_orchestrator.conversations.keys import iso
from rag_orchestrator.conversations.s3_objects import ObjectStore
from rag_orchestrator.conversations.table import Table
from rag_orchestrator.domain.base import new_id, utcnow
from rag_orchestrator.domain.conversations import Conversation, ConversationMessage
from rag_orchestrator.domain.messages import Role
from rag_orchestrator.domain.passages import CITATION
from rag_orchestrator.errors import NotFound, StorageUnavailable
from rag_orchestrator.lifecycle.conversation_erasure import SHARE_POINTER, RevokeShares

SHARE_PREFIX = "SHARE#"


class ShareNotFound(NotFound):
    error = "Share not found"


def snapshot_key(conversation_id: str, share_id: str) -> str:
    return f"{content_prefix(conversation_id)}shares/{share_id}.json"


def share_key(share_id: str) -> dict[str, Any]:
    return it.to_attributes({"PK": SHARE_PREFIX + share_id, "SK": it.META})


def snapshot(conversation: Conversation, messages: Sequence[ConversationMessage]) -> dict[str, Any]:
    shown = [
        m
        for m in messages
        if m.role in (Role.USER, Role.ASSISTANT) and m.content and not m.superseded_by and not m.tool_calls
    ]
    return {
        "title": conversation.title,
        "messages": [
            {
                "role": m.role.value,
                "content": m.content,
                "createdAt": iso(m.created_at),
                "sources": list(dict.fromkeys(f"{d}#{i}" for d, i in CITATION.findall(m.content))),
            }
            for m in shown
        ],
    }


class Shares:
    def __init__(self, table: Table, s3: Any, bucket: str) -> None:
        self._table = table
        self._s3 = s3
        self._bucket = bucket
        self._objects = ObjectStore(s3, bucket)

    def create(self, conversation: Conversation, messages: Sequence[ConversationMessage]) -> str:
        """Store the snapshot, then the share and its pointer (one transaction); the shareId."""
        share_id, cid = new_id(), conversation.conversation_id
        body = dict(snapshot(conversation, messages), sharedAt=iso(utcnow()))
        key = snapshot_key(cid, share_id)
        self._s3.put_object(
            Bucket=self._bucket, Key=key, Body=json.dumps(body).encode(), ContentType="application/json"
        )
        share = {
            "shareId": share_id,
            "conversationId": cid,
            "createdAt": body["sharedAt"],
            "snapshotKey": key,
        }
        self._table.transact(
            [
                {"Put": {"Item": share_key(share_id) | it.to_attributes(share | {"entity": "share"})}},
                {
                    "Put": {
                        "Item": it.to_attributes(
                            {"PK": it.pk(cid), "SK": SHARE_POINTER + share_id, "entity": "sharePointer"}
                        )
                    }
                },
            ]
        )
        return share_id

    def read(self, share_id: str) -> dict[str, Any]:
        """The snapshot; ShareNotFound once revoked, or when the conversation is deleted or gone."""
        found = self._table.call("get_item", Key=share_key(share_id), ConsistentRead=True).get("Item")
        share = it.from_attributes(found or {})
        if not share:
            raise ShareNotFound(f"Share not found: {share_id}")
        meta = self._table.call(
            "get_item",
            Key=it.to_attributes({"PK": it.pk(share["conversationId"]), "SK": it.META}),
            ConsistentRead=True,
        ).get("Item")
        if not meta or it.from_attributes(meta).get("status") == "DELETED":
            raise ShareNotFound(f"Share not found: {share_id}")
        try:
            body = self._s3.get_object(Bucket=self._bucket, Key=share["snapshotKey"])["Body"].read()
        except Exception as exc:
            raise StorageUnavailable("Could not read the shared conversation") from exc
        return {"shareId": share_id, **json.loads(body)}

    def revoke(self, conversation_id: str, share_id: str) -> None:
        """One share of the conversation (its ownership checked by the caller); ShareNotFound if none."""
        pointer_key = {"PK": it.pk(conversation_id), "SK": SHARE_POINTER + share_id}
        if not self._table.call("get_item", Key=it.to_attributes(pointer_key), ConsistentRead=True).get(
            "Item"
        ):
            raise ShareNotFound(f"Share not found: {share_id}")
        revoke(self._table, self._objects, [pointer_key])

    def revoke_all(self, conversation_id: str) -> int:
        """Every share of the conversation (it was deleted)."""
        response = self._table.call(
            "query",
            KeyConditionExpression="PK = :pk AND begins_with(SK, :share)",
            ExpressionAttributeValues=it.to_attributes(
                {":pk": it.pk(conversation_id), ":share": SHARE_POINTER}
            ),
            ConsistentRead=True,
        )
        pointers = [it.from_attributes(v) for v in response.get("Items", ())]
        revoke(self._table, self._objects, pointers)
        return len(pointers)


def revoke(table: Table, objects: ObjectStore, pointers: Sequence[dict[str, Any]]) -> tuple[int, int]:
    """Every share the pointers name, gone; the items and objects removed."""
    removed_objects = 0
    for pointer in pointers:
        conversation_id = str(pointer["PK"]).removeprefix("CONV#")
        share_id = str(pointer["SK"]).removeprefix(SHARE_POINTER)
        table.call("delete_item", Key=share_key(share_id))
        removed_objects += objects.delete_versions(snapshot_key(conversation_id, share_id), exact=True)
    table.batch_delete([it.to_attributes({"PK": p["PK"], "SK": p["SK"]}) for p in pointers])
    return 2 * len(pointers), removed_objects


def revoker(table: Table, objects: ObjectStore) -> RevokeShares:
    return lambda pointers: revoke(table, objects, pointers)
