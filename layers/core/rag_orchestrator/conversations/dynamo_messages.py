"""Reading a conversation's messages from the table, and from its S3 transcript once archived.

A page of the transcript is a GetItem (ownership) and one Query; a turn's window is one Query, ascending
from META, that brings the conversation's audit head and owner along (a turn's second request).
"""

from __future__ import annotations

from typing import Any

from rag_orchestrator.conversations import items as it
from rag_orchestrator.conversations.audit_trail import head_of
from rag_orchestrator.conversations.cursors import CursorCodec
from rag_orchestrator.conversations.dynamo_conversations import read_owned
from rag_orchestrator.conversations.dynamo_listing import start_key
from rag_orchestrator.conversations.keys import messages_scope
from rag_orchestrator.conversations.message_items import MessageItems
from rag_orchestrator.conversations.message_lookup import CURRENT
from rag_orchestrator.conversations.paging import check_limit, offset_page
from rag_orchestrator.conversations.table import Table
from rag_orchestrator.conversations.transcripts import S3Transcripts, merge
from rag_orchestrator.conversations.turn_data import TurnContext
from rag_orchestrator.domain.conversations import ConversationMessage, Page
from rag_orchestrator.errors import BadRequest


class DynamoMessages:
    def __init__(
        self, table: Table, items: MessageItems, transcripts: S3Transcripts, cursors: CursorCodec
    ) -> None:
        self._table = table
        self._items = items
        self._transcripts = transcripts
        self._cursors = cursors

    def page(
        self, conversation_id: str, caller_id: str, limit: int, cursor: str | None, all_versions: bool
    ) -> Page[ConversationMessage]:
        check_limit(limit)
        conversation = read_owned(self._table, conversation_id, caller_id)
        scope = messages_scope(conversation_id, caller_id, all_versions)
        if conversation.s3_key:  # archived, or archived once and continued since
            stored = merge(self._transcripts.read(conversation.s3_key), self._all(conversation_id))
            shown = [m for m in stored if all_versions or m.superseded_by is None]
            return offset_page(shown, limit, cursor, self._cursors, scope)
        partition = it.pk(conversation_id)
        start = start_key(self._cursors, cursor, scope, {"PK": partition}, ("PK", "SK"))
        if start and not start["SK"].startswith(it.MSG_PREFIX):
            raise BadRequest("Invalid cursor")
        query = _messages_query(partition)
        if not all_versions:
            query["FilterExpression"] = CURRENT
        found, position = self._table.query_page(query, limit, start, ("PK", "SK"))
        following = self._cursors.encode(position, scope) if position else None
        return Page(items=[self._items.restore(v) for v in found], next_cursor=following)

    def context(self, conversation_id: str, size: int) -> TurnContext:
        """The window, with the conversation's audit head, owner and whether it has a title."""
        meta, recent = self._read_context(conversation_id, size)
        owner = meta.get("callerId") if meta else None
        titled = "title" in meta if meta else None
        memory = meta.get("memory") is not False if meta else True
        summary, through = (meta.get("summary"), meta.get("summarizedThrough")) if meta else (None, None)
        messages = self._with_transcript(meta, recent, size)
        return TurnContext(messages, head_of(meta), owner, titled, memory, summary, through)

    def _all(self, conversation_id: str) -> list[ConversationMessage]:
        params, found, start = _messages_query(it.pk(conversation_id)), [], None
        while True:
            page, start = self._table.query_page(dict(params), 1000, start, ("PK", "SK"))
            found += [self._items.restore(v) for v in page]
            if start is None:
                return found

    def _read_context(
        self, conversation_id: str, size: int
    ) -> tuple[dict[str, Any] | None, list[ConversationMessage]]:
        """One Query, ascending from META: the conversation, then the newest messages. Earlier
        versions are filtered out; only when they leave the window short is it read on."""
        params = {
            "KeyConditionExpression": "PK = :pk AND SK BETWEEN :meta AND :end",
            "FilterExpression": CURRENT,
            "ExpressionAttributeValues": it.to_attributes(
                {":pk": it.pk(conversation_id), ":meta": it.META, ":end": it.MSG_END}
            ),
            "ScanIndexForward": True,
            "ConsistentRead": True,
        }
        found, _ = self._table.query_page(params, size + 1, None, ("PK", "SK"))
        meta = found.pop(0) if found and found[0]["SK"] == it.META else None
        return meta, [self._items.restore(v) for v in reversed(found[:size])]

    def _with_transcript(
        self, meta: dict[str, Any] | None, recent: list[ConversationMessage], size: int
    ) -> list[ConversationMessage]:
        """A conversation with a transcript reaches back into it when the table runs short."""
        key = meta.get("s3Key") if meta else None
        if not key or len(recent) >= size:
            return recent
        current = [m for m in merge(self._transcripts.read(key), recent) if m.superseded_by is None]
        return current[-size:]


def _messages_query(partition: str) -> dict[str, Any]:
    # Message keys are inverted: descending order is oldest first.
    return {
        "KeyConditionExpression": "PK = :pk AND begins_with(SK, :msg)",
        "ExpressionAttributeValues": it.to_attributes({":pk": partition, ":msg": it.MSG_PREFIX}),
        "ScanIndexForward": False,
        "ConsistentRead": True,
    }
