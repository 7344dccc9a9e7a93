"""Feedback in the DynamoDB store: the rating on the message item (shown when the message is read),
and a FEEDBACK#<messageId> item in the conversation's partition for the admin listing.

The listing is a Query of the ByCaller index, reused: a rating's item carries GSI1PK=FEEDBACK#<UTC
day it was given> and GSI1SK=<time>#<conversationId>#<messageId>, so a day's ratings are one
partition, newest first; a listing walks the days back to `since`. No GSI of its own, no Scan.
A day's partition takes every rating of that day: people rate answers far below the ~1,000 writes
a second one partition accepts.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from rag_orchestrator.conversations import items as it
from rag_orchestrator.conversations.cursors import CursorCodec, feedback_scope
from rag_orchestrator.conversations.dynamo_conversations import read_owned
from rag_orchestrator.conversations.dynamo_listing import INDEX, KEY_NAMES
from rag_orchestrator.conversations.keys import iso
from rag_orchestrator.conversations.message_items import MessageItems
from rag_orchestrator.conversations.message_lookup import find_message
from rag_orchestrator.conversations.meta_update import OWNED, meta_key
from rag_orchestrator.conversations.paging import check_limit
from rag_orchestrator.conversations.table import ConditionFailed, Table
from rag_orchestrator.domain.base import in_utc
from rag_orchestrator.domain.conversations import ConversationStatus, Page
from rag_orchestrator.domain.feedback import Feedback, FeedbackEntry, Rating
from rag_orchestrator.domain.messages import Role
from rag_orchestrator.errors import BadRequest, ConversationNotFound, MessageNotFound

FEEDBACK_PREFIX = "FEEDBACK#"


def day_partition(moment: datetime) -> str:
    return FEEDBACK_PREFIX + in_utc(moment).date().isoformat()


def feedback_item(entry: FeedbackEntry) -> dict[str, Any]:
    values = entry.model_dump(mode="json", by_alias=True, exclude_none=True)
    return values | {
        "PK": it.pk(entry.conversation_id),
        "SK": FEEDBACK_PREFIX + entry.message_id,
        "entity": "feedback",
        "GSI1PK": day_partition(entry.updated_at),
        "GSI1SK": f"{iso(entry.updated_at)}#{entry.conversation_id}#{entry.message_id}",
    }


class FeedbackWrites:
    def __init__(self, table: Table, items: MessageItems, cursors: CursorCodec) -> None:
        self._table = table
        self._items = items
        self._cursors = cursors

    def set_feedback(
        self, conversation_id: str, caller_id: str, message_id: str, feedback: Feedback | None
    ) -> None:
        """One transaction: the conversation still the caller's, the message an assistant's, the
        rating on it and its listing item (put, or deleted with the rating)."""
        found = find_message(self._table, conversation_id, message_id)
        if found is None or found.get("role") != Role.ASSISTANT.value:
            read_owned(self._table, conversation_id, caller_id)  # a foreign conversation: its own 404
            raise MessageNotFound(message_id)
        key = {"PK": it.pk(conversation_id), "SK": FEEDBACK_PREFIX + message_id}
        message_key = it.to_attributes({"PK": found["PK"], "SK": found["SK"]})
        if feedback is None:
            on_message: dict[str, Any] = {"UpdateExpression": "REMOVE feedback"}
            listing: dict[str, Any] = {"Delete": {"Key": it.to_attributes(key)}}
        else:
            stored = feedback.model_dump(mode="json", by_alias=True, exclude_none=True)
            on_message = {
                "UpdateExpression": "SET feedback = :feedback",
                "ExpressionAttributeValues": it.to_attributes({":feedback": stored}),
            }
            entry = FeedbackEntry(
                conversation_id=conversation_id,
                message_id=message_id,
                caller_id=caller_id,
                **feedback.model_dump(),
            )
            expires = self._items.expiry(caller_id)
            item = feedback_item(entry) | ({"expiresAt": expires} if expires else {})
            listing = {"Put": {"Item": it.to_attributes(item)}}
        try:
            self._table.transact(
                [
                    {
                        "ConditionCheck": {
                            "Key": meta_key(conversation_id),
                            "ConditionExpression": OWNED,
                            "ExpressionAttributeNames": {"#status": "status"},
                            "ExpressionAttributeValues": it.to_attributes(
                                {":caller": caller_id, ":deleted": ConversationStatus.DELETED.value}
                            ),
                        }
                    },
                    {
                        "Update": {
                            "Key": message_key,
                            "ConditionExpression": "attribute_exists(PK)",
                            **on_message,
                        }
                    },
                    listing,
                ]
            )
        except ConditionFailed as failed:
            if failed.code(0) == "ConditionalCheckFailed":
                raise ConversationNotFound(conversation_id) from None
            raise MessageNotFound(message_id) from None

    def feedback(
        self, since: datetime, rating: Rating | None, limit: int, cursor: str | None
    ) -> Page[FeedbackEntry]:
        """Day partitions from today back to `since`'s day, each newest first; the cursor holds
        the day and the position in it."""
        check_limit(limit)
        scope = feedback_scope(since, rating)
        day, start = datetime.now(UTC), None
        if cursor:
            position = self._cursors.decode(cursor, scope)
            day = _parse_day(position.pop("day", None))
            start = _checked(position, day)
        found: list[dict[str, Any]] = []
        last_day = day_partition(since)
        while True:
            partition = day_partition(day)
            page, start = self._table.query_page(
                _day_query(partition, since, rating), limit - len(found), start, KEY_NAMES
            )
            found += page
            if start is not None:  # the page is full within this day
                following = self._cursors.encode(start | {"day": partition}, scope)
                return Page(items=[_entry(v) for v in found], next_cursor=following)
            if partition <= last_day:
                return Page(items=[_entry(v) for v in found])
            day -= timedelta(days=1)
            if len(found) == limit:  # the next page starts with the day before
                following = self._cursors.encode({"day": day_partition(day)}, scope)
                return Page(items=[_entry(v) for v in found], next_cursor=following)


def _day_query(partition: str, since: datetime, rating: Rating | None) -> dict[str, Any]:
    values: dict[str, Any] = {":pk": partition, ":since": iso(since)}
    params: dict[str, Any] = {
        "IndexName": INDEX,
        "KeyConditionExpression": "GSI1PK = :pk AND GSI1SK >= :since",
        "ScanIndexForward": False,
    }
    if rating:
        params["FilterExpression"] = "rating = :rating"
        values[":rating"] = rating
    params["ExpressionAttributeValues"] = it.to_attributes(values)
    return params


def _parse_day(value: Any) -> datetime:
    if not isinstance(value, str) or not value.startswith(FEEDBACK_PREFIX):
        raise BadRequest("Invalid cursor")
    try:
        return datetime.strptime(value.removeprefix(FEEDBACK_PREFIX), "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise BadRequest("Invalid cursor") from None


def _checked(position: dict[str, Any], day: datetime) -> dict[str, Any] | None:
    """A position within the cursor's day, or None (the day from its start)."""
    if not position:
        return None
    if set(position) != set(KEY_NAMES) or position.get("GSI1PK") != day_partition(day):
        raise BadRequest("Invalid cursor")
    if not all(isinstance(v, str) for v in position.values()):
        raise BadRequest("Invalid cursor")
    return position


def _entry(values: dict[str, Any]) -> FeedbackEntry:
    return FeedbackEntry.model_validate(values)
