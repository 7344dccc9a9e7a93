"""Listing conversations from the ByCaller and ByUser indexes, and validating page cursors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rag_orchestrator.conversations import items as it
from rag_orchestrator.conversations.cursors import CursorCodec
from rag_orchestrator.conversations.store import check_limit, list_scope
from rag_orchestrator.conversations.table import Table
from rag_orchestrator.domain.conversations import Conversation, ConversationStatus, Page
from rag_orchestrator.errors import BadRequest

INDEX_PREFIXES = {"ByCaller": "GSI1", "ByUser": "GSI2"}
MAX_KEY_CHARS = 1024


def start_key(
    codec: CursorCodec, cursor: str | None, scope: str, fixed: dict[str, str], key_names: Sequence[str]
) -> dict[str, Any] | None:
    """A cursor's start key, accepted only when well formed and inside the partition being read."""
    if not cursor:
        return None
    position = codec.decode(cursor, scope)
    well_formed = set(position) == set(key_names) and all(
        isinstance(v, str) and 0 < len(v) <= MAX_KEY_CHARS for v in position.values()
    )
    if not well_formed or any(position[k] != v for k, v in fixed.items()):
        raise BadRequest("Invalid cursor")
    return position


def list_page(
    table: Table,
    codec: CursorCodec,
    index: str,
    partition: str,
    *,
    caller_id: str | None,
    status: ConversationStatus | None,
    limit: int,
    cursor: str | None,
) -> Page[Conversation]:
    """One page of an index partition, most recent activity first, optionally filtered."""
    check_limit(limit)
    prefix = INDEX_PREFIXES[index]
    scope = list_scope(index, partition, status, caller_id)
    key_names = ("PK", "SK", f"{prefix}PK", f"{prefix}SK")
    start = start_key(codec, cursor, scope, {f"{prefix}PK": partition}, key_names)
    filters, values = [], {":pk": partition}
    params: dict[str, Any] = {
        "IndexName": index,
        "KeyConditionExpression": f"{prefix}PK = :pk",
        "ScanIndexForward": False,
    }
    if status:
        filters.append("#status = :status")
        values[":status"] = status.value
        params["ExpressionAttributeNames"] = {"#status": "status"}
    if caller_id:
        filters.append("callerId = :caller")
        values[":caller"] = caller_id
    if filters:
        params["FilterExpression"] = " AND ".join(filters)
    params["ExpressionAttributeValues"] = it.to_attributes(values)
    found, position = table.query_page(params, limit, start, key_names)
    following = codec.encode(position, scope) if position else None
    return Page(items=[it.conversation_from_item(v) for v in found], next_cursor=following)
