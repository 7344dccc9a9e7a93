"""Reading a conversation's audit trail from DynamoDB (and S3 once archived): a part of the store.

The head hash is on META (`lastAuditHash`), or, once a deleted conversation is purged, on the AUDIT$
item its records are kept with; `auditS3Key` on either says that the older records were archived.
A page of a trail still in the table is one Query; an archived trail is read whole and paged here.
"""

from __future__ import annotations

from typing import Any

from rag_orchestrator.conversations import items as it
from rag_orchestrator.conversations.audit_trail import (
    AUDIT_HEAD,
    AUDIT_PREFIX,
    TrailHead,
    audit_scope,
    held_page,
    position,
    record_of,
    trail_page,
)
from rag_orchestrator.conversations.cursors import CursorCodec
from rag_orchestrator.conversations.paging import check_limit
from rag_orchestrator.conversations.table import Table
from rag_orchestrator.conversations.transcripts import S3AuditTrails, merge_trails
from rag_orchestrator.domain.audit import AuditTrail
from rag_orchestrator.errors import ConversationNotFound


def trail_query(conversation_id: str) -> dict[str, Any]:
    """Every audit record of a conversation, oldest first."""
    return {
        "KeyConditionExpression": "PK = :pk AND begins_with(SK, :audit)",
        "ExpressionAttributeValues": it.to_attributes(
            {":pk": it.pk(conversation_id), ":audit": AUDIT_PREFIX}
        ),
        "ConsistentRead": True,
    }


def read_trail(table: Table, conversation_id: str) -> list[dict[str, Any]]:
    """Every audit item of a conversation, oldest first, storage attributes included."""
    params, found, start = trail_query(conversation_id), [], None
    while True:
        page, start = table.query_page(dict(params), 1000, start, ("PK", "SK"))
        found += page
        if start is None:
            return found


class AuditReads:
    def __init__(self, table: Table, cursors: CursorCodec, trails: S3AuditTrails) -> None:
        self._table = table
        self._cursors = cursors
        self._trails = trails

    def audit(self, conversation_id: str, limit: int, cursor: str | None) -> AuditTrail:
        check_limit(limit)
        holder = self._holder(conversation_id)
        head, scope = TrailHead.of(holder), audit_scope(conversation_id)
        if holder.get("auditS3Key"):
            held = self._trails.read(holder["auditS3Key"])
            stored = [record_of(v) for v in read_trail(self._table, conversation_id)]
            return held_page(merge_trails(held, stored), head, limit, cursor, self._cursors, scope)
        start = position(self._cursors, cursor, scope)
        after = {"PK": it.pk(conversation_id), "SK": AUDIT_PREFIX + start.after} if start.after else None
        found, last = self._table.query_page(trail_query(conversation_id), limit, after, ("PK", "SK"))
        following = str(last["SK"]).removeprefix(AUDIT_PREFIX) if last else None
        return trail_page([record_of(v) for v in found], following, head, start, self._cursors, scope)

    def _holder(self, conversation_id: str) -> dict[str, Any]:
        """META, else the AUDIT$ item a purge left; ConversationNotFound when neither is there."""
        for sort_key in (it.META, AUDIT_HEAD):
            response = self._table.call(
                "get_item",
                Key=it.to_attributes({"PK": it.pk(conversation_id), "SK": sort_key}),
                ConsistentRead=True,
            )
            if response.get("Item"):
                return it.from_attributes(response["Item"])
        raise ConversationNotFound(conversation_id)
