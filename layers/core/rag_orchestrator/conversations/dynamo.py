"""ConversationStore on one DynamoDB table (key design in items.py) with large texts in S3.

Every public method runs in a worker thread (boto3 blocks). Request counts: start_turn, finish_turn,
create and soft_delete are one write each (finish_turn adds BatchWriteItem calls only past 99
messages or ~3.5 MB); window is one Query; get is one GetItem; messages is a GetItem (ownership) and
one Query per page. A turn therefore costs three requests: start_turn, context (the window, with
the audit head on META), finish_turn (the audit record in its transaction).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from rag_orchestrator.config import Settings
from rag_orchestrator.conversations import items as it
from rag_orchestrator.conversations.approvals import ApprovalWrites
from rag_orchestrator.conversations.audit_trail import head_of
from rag_orchestrator.conversations.contents import ContentOffloader
from rag_orchestrator.conversations.cursors import CursorCodec, cursor_key
from rag_orchestrator.conversations.dynamo_audit import AuditReads
from rag_orchestrator.conversations.dynamo_listing import list_page, start_key
from rag_orchestrator.conversations.dynamo_titles import TitleWrites
from rag_orchestrator.conversations.dynamo_versions import RevisionWrites
from rag_orchestrator.conversations.dynamo_writes import TurnWrites
from rag_orchestrator.conversations.feedback import FeedbackWrites
from rag_orchestrator.conversations.keys import iso, messages_scope
from rag_orchestrator.conversations.listing import EVERY, Listing
from rag_orchestrator.conversations.message_lookup import CURRENT
from rag_orchestrator.conversations.meta_update import meta_key
from rag_orchestrator.conversations.paging import DEFAULT_PAGE_SIZE, check_limit, offset_page
from rag_orchestrator.conversations.store import TurnContext, in_worker_thread, token_total
from rag_orchestrator.conversations.table import ConditionFailed, Table
from rag_orchestrator.conversations.transcripts import S3AuditTrails, S3Transcripts, merge
from rag_orchestrator.conversations.usage import UsageReads
from rag_orchestrator.domain.base import utcnow
from rag_orchestrator.domain.callers import is_guest
from rag_orchestrator.domain.conversations import Conversation, ConversationMessage, ConversationStatus, Page
from rag_orchestrator.errors import BadRequest, Conflict, ConversationNotFound

DELETED = ConversationStatus.DELETED.value


class DynamoConversationStore(
    TurnWrites, ApprovalWrites, AuditReads, UsageReads, TitleWrites, FeedbackWrites, RevisionWrites
):
    """Conversations, listings and transcripts here; the writes of a turn in TurnWrites, decisions on
    held calls in ApprovalWrites, the audit trail's reads in AuditReads, a caller's day in UsageReads,
    titles, feedback and revisions in their own parts."""

    def __init__(
        self,
        table: str,
        bucket: str,
        *,
        dynamodb: Any,
        s3: Any,
        cursor_secret: bytes,
        deleted_retention_days: int = 30,
        guest_ttl_hours: int = 24,
    ) -> None:
        self._table = Table(dynamodb, table)
        self._contents = ContentOffloader(s3, bucket)
        self._transcripts = S3Transcripts(s3, bucket)
        self._trails = S3AuditTrails(s3, bucket)
        self._cursors = CursorCodec(cursor_secret)
        self._retention = timedelta(days=deleted_retention_days)
        self._guest_ttl = timedelta(hours=guest_ttl_hours)

    @classmethod
    def from_settings(cls, settings: Settings) -> DynamoConversationStore:
        from rag_orchestrator import aws

        return cls(
            settings.conversations_table or "",
            settings.transcripts_bucket or "",
            dynamodb=aws.client("dynamodb"),
            s3=aws.LazyClient("s3"),  # for large contents and transcripts: most turns never need it
            cursor_secret=cursor_key(settings),
            deleted_retention_days=settings.deleted_retention_days,
            guest_ttl_hours=settings.guest_ttl_hours,
        )

    # ------------------------------------------------------------------ conversations

    @in_worker_thread
    def create(
        self, conversation: Conversation, messages: Sequence[ConversationMessage] = ()
    ) -> Conversation:
        if messages:
            conversation = conversation.model_copy(
                update={
                    "message_count": len(messages),
                    "total_tokens": token_total(messages),
                    "last_message_at": conversation.updated_at,
                }
            )
        expires = self._expiry(conversation.caller_id)
        put = {
            "Item": it.to_attributes(
                it.conversation_item(conversation) | ({"expiresAt": expires} if expires else {})
            ),
            "ConditionExpression": "attribute_not_exists(PK)",
        }
        try:
            if messages:
                self._table.transact([{"Put": put}, *self._message_puts(messages, expires)])
            else:
                self._table.call("put_item", **put)
        except ConditionFailed:
            raise Conflict("A conversation with this id already exists") from None
        return conversation

    @in_worker_thread
    def get(self, conversation_id: str, caller_id: str) -> Conversation:
        return self._get(conversation_id, caller_id)

    @in_worker_thread
    def list_by_caller(
        self,
        caller_id: str,
        *,
        limit: int = DEFAULT_PAGE_SIZE,
        cursor: str | None = None,
        where: Listing = EVERY,
    ) -> Page[Conversation]:
        return list_page(self._table, self._cursors, caller_id, limit=limit, cursor=cursor, where=where)

    @in_worker_thread
    def soft_delete(self, conversation_id: str, caller_id: str) -> None:
        """Into PURGE# for the retention period; a guest's stays in EXPIRE#, with its own TTL."""
        now = utcnow()
        values: dict[str, Any] = {":deleted": DELETED, ":now": iso(now), ":caller": caller_id}
        expression = "SET #status = :deleted, deletedAt = :now, updatedAt = :now"
        if not is_guest(caller_id):
            expression += ", expiresAt = :ttl, GSI3PK = :purge, GSI3SK = :now"
            values |= {
                ":ttl": it.epoch(now + self._retention + it.TTL_GRACE),
                ":purge": it.archive_shard(conversation_id, it.PURGE_PREFIX),
            }
        try:
            self._table.call(
                "update_item",
                Key=meta_key(conversation_id),
                UpdateExpression=expression + " REMOVE GSI1PK, GSI1SK",
                ConditionExpression="callerId = :caller AND #status <> :deleted",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues=it.to_attributes(values),
            )
        except ConditionFailed:
            raise ConversationNotFound(conversation_id) from None

    # ------------------------------------------------------------------ messages

    @in_worker_thread
    def messages(
        self,
        conversation_id: str,
        caller_id: str,
        *,
        limit: int = DEFAULT_PAGE_SIZE,
        cursor: str | None = None,
        all_versions: bool = False,
    ) -> Page[ConversationMessage]:
        check_limit(limit)
        conversation = self._get(conversation_id, caller_id)
        scope = messages_scope(conversation_id, caller_id, all_versions)
        if conversation.s3_key:  # archived, or archived once and continued since
            stored = merge(self._transcripts.read(conversation.s3_key), self._all_messages(conversation_id))
            shown = [m for m in stored if all_versions or m.superseded_by is None]
            return offset_page(shown, limit, cursor, self._cursors, scope)
        partition = it.pk(conversation_id)
        start = start_key(self._cursors, cursor, scope, {"PK": partition}, ("PK", "SK"))
        if start and not start["SK"].startswith(it.MSG_PREFIX):
            raise BadRequest("Invalid cursor")
        query = self._messages_query(partition)
        if not all_versions:
            query["FilterExpression"] = CURRENT
        found, position = self._table.query_page(query, limit, start, ("PK", "SK"))
        following = self._cursors.encode(position, scope) if position else None
        return Page(items=[self._message(v) for v in found], next_cursor=following)

    @in_worker_thread
    def window(self, conversation_id: str, size: int) -> list[ConversationMessage]:
        meta, recent = self._read_context(conversation_id, size)
        return self._with_transcript(meta, recent, size)

    @in_worker_thread
    def context(self, conversation_id: str, size: int) -> TurnContext:
        meta, recent = self._read_context(conversation_id, size)
        owner = meta.get("callerId") if meta else None
        titled = "title" in meta if meta else None
        return TurnContext(self._with_transcript(meta, recent, size), head_of(meta), owner, titled)

    # ------------------------------------------------------------------ helpers

    def _get(self, conversation_id: str, caller_id: str) -> Conversation:
        response = self._table.call("get_item", Key=meta_key(conversation_id), ConsistentRead=True)
        return self._owned(it.from_attributes(response.get("Item") or {}), conversation_id, caller_id)

    @staticmethod
    def _owned(values: dict[str, Any] | None, conversation_id: str, caller_id: str) -> Conversation:
        if not values or values.get("callerId") != caller_id or values.get("status") == DELETED:
            raise ConversationNotFound(conversation_id)
        return it.conversation_from_item(values)

    def _message(self, values: dict[str, Any]) -> ConversationMessage:
        return ConversationMessage.model_validate(self._contents.restore(values))

    def _messages_query(self, partition: str) -> dict[str, Any]:
        # Message keys are inverted: descending order is oldest first.
        return {
            "KeyConditionExpression": "PK = :pk AND begins_with(SK, :msg)",
            "ExpressionAttributeValues": it.to_attributes({":pk": partition, ":msg": it.MSG_PREFIX}),
            "ScanIndexForward": False,
            "ConsistentRead": True,
        }

    def _all_messages(self, conversation_id: str) -> list[ConversationMessage]:
        params, found, start = self._messages_query(it.pk(conversation_id)), [], None
        while True:
            page, start = self._table.query_page(dict(params), 1000, start, ("PK", "SK"))
            found += [self._message(v) for v in page]
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
        return meta, [self._message(v) for v in reversed(found[:size])]

    def _with_transcript(
        self, meta: dict[str, Any] | None, recent: list[ConversationMessage], size: int
    ) -> list[ConversationMessage]:
        """A conversation with a transcript reaches back into it when the table runs short."""
        key = meta.get("s3Key") if meta else None
        if not key or len(recent) >= size:
            return recent
        current = [m for m in merge(self._transcripts.read(key), recent) if m.superseded_by is None]
        return current[-size:]
