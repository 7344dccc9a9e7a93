"""Listing a caller's conversations from the ByCaller index, and validating page cursors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rag_orchestrator.conversations import items as it
from rag_orchestrator.conversations.cursors import CursorCodec
from rag_orchestrator.conversations.keys import iso
from rag_orchestrator.conversations.listing import Listing
from rag_orchestrator.conversations.paging import check_limit
from rag_orchestrator.conversations.table import Table
from rag_orchestrator.domain.conversations import Conversation, Page
from rag_orchestrator.errors import BadRequest

INDEX = "ByCaller"
KEY_NAMES = ("PK", "SK", "GSI1PK", "GSI1SK")
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
    table: Table, codec: CursorCodec, caller_id: str, *, limit: int, cursor: str | None, where: Listing
) -> Page[Conversation]:
    """One page of the caller's conversations, most recent activity first, those `where` keeps
    (DynamoDB filters the caller's partition: titles.py)."""
    check_limit(limit)
    partition = f"CALLER#{caller_id}"
    scope = where.scope(partition)
    start = start_key(codec, cursor, scope, {"GSI1PK": partition}, KEY_NAMES)
    params: dict[str, Any] = {
        "IndexName": INDEX,
        "KeyConditionExpression": "GSI1PK = :pk",
        "ScanIndexForward": False,
    }
    filters, values = _filters(where)
    if where.status:
        params["ExpressionAttributeNames"] = {"#status": "status"}
    if filters:
        params["FilterExpression"] = " AND ".join(filters)
    params["ExpressionAttributeValues"] = it.to_attributes({":pk": partition, **values})
    found, position = table.query_page(params, limit, start, KEY_NAMES)
    following = codec.encode(position, scope) if position else None
    return Page(items=[it.conversation_from_item(v) for v in found], next_cursor=following)


def _filters(where: Listing) -> tuple[list[str], dict[str, Any]]:
    """The FilterExpression's conditions and values. createdAt is stored as fixed-width UTC ISO-8601
    (keys.iso), so its range compares as strings."""
    filters: list[str] = []
    values: dict[str, Any] = {}
    if where.status:
        filters.append("#status = :status")
        values[":status"] = where.status.value
    for index, word in enumerate(where.title_words):
        filters.append(f"contains(titleSearch, :w{index})")
        values[f":w{index}"] = f" {word}"
    if where.user_id is not None:
        filters.append("userId = :user")
        values[":user"] = where.user_id
    if where.created_from is not None:
        filters.append("createdAt >= :from")
        values[":from"] = iso(where.created_from)
    if where.created_to is not None:
        filters.append("createdAt <= :to")
        values[":to"] = iso(where.created_to)
    return filters, values
