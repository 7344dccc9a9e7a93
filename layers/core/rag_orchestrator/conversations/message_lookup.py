"""Finding messages in a conversation's partition of the DynamoDB table: by id (a message's sort key
is not derived from its id), and the current versions newest first (the last exchange)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rag_orchestrator.conversations import items as it
from rag_orchestrator.conversations.table import Table

PAGE = 100
CURRENT = "attribute_not_exists(supersededBy)"


def _pages(table: Table, params: dict[str, Any]) -> Iterator[list[dict[str, Any]]]:
    start = None
    while True:
        found, start = table.query_page(dict(params), PAGE, start, ("PK", "SK"))
        yield found
        if start is None:
            return


def find_message(table: Table, conversation_id: str, message_id: str) -> dict[str, Any] | None:
    """The message item with this id (any version), or None; DynamoDB filters the partition's messages."""
    params = {
        "KeyConditionExpression": "PK = :pk AND begins_with(SK, :msg)",
        "FilterExpression": "messageId = :id",
        "ExpressionAttributeValues": it.to_attributes(
            {":pk": it.pk(conversation_id), ":msg": it.MSG_PREFIX, ":id": message_id}
        ),
        "ConsistentRead": True,
    }
    for page in _pages(table, params):
        if page:
            return page[0]
    return None


def newest_current(table: Table, conversation_id: str) -> Iterator[dict[str, Any]]:
    """The current versions of the messages, newest first (message keys ascend from the newest)."""
    params = {
        "KeyConditionExpression": "PK = :pk AND begins_with(SK, :msg)",
        "FilterExpression": CURRENT,
        "ExpressionAttributeValues": it.to_attributes({":pk": it.pk(conversation_id), ":msg": it.MSG_PREFIX}),
        "ScanIndexForward": True,
        "ConsistentRead": True,
    }
    for page in _pages(table, params):
        yield from page
