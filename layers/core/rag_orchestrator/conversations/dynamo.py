"""The conversation store on one DynamoDB table (key design in items.py) with large texts in S3: a facade
over small parts that share the table.

    dynamo_conversations.py  create, get, soft_delete        dynamo_listing.py  a caller's listing
    dynamo_messages.py       the transcript, a turn's window  dynamo_titles.py   titles and metadata
    dynamo_writes.py         a turn's start, finish, abort     dynamo_versions.py regenerate and edit
    approvals.py             a decision on a held call         usage.py           a caller's day
    feedback.py              ratings and their listing         dynamo_audit.py    the audit trail

Every method runs its part in a worker thread (boto3 blocks). Request counts: start_turn, finish_turn,
create and soft_delete are one write each (finish_turn adds BatchWriteItem calls only past 99
messages or ~3.5 MB); window is one Query; get is one GetItem; messages is a GetItem (ownership) and
one Query per page. A turn therefore costs three requests: start_turn, context (the window, with
the audit head on META), finish_turn (the audit record in its transaction).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, timedelta
from typing import Any

from rag_orchestrator.aws import AwsClients
from rag_orchestrator.config import Settings
from rag_orchestrator.conversations.approvals import ApprovalWrites
from rag_orchestrator.conversations.contents import ContentOffloader
from rag_orchestrator.conversations.cursors import CursorCodec, actor_key, cursor_key
from rag_orchestrator.conversations.dynamo_audit import AuditReads
from rag_orchestrator.conversations.dynamo_conversations import DynamoConversations
from rag_orchestrator.conversations.dynamo_listing import list_page
from rag_orchestrator.conversations.dynamo_messages import DynamoMessages
from rag_orchestrator.conversations.dynamo_titles import TitleWrites
from rag_orchestrator.conversations.dynamo_versions import RevisionWrites
from rag_orchestrator.conversations.dynamo_writes import TurnWrites
from rag_orchestrator.conversations.feedback import FeedbackWrites
from rag_orchestrator.conversations.ledger import LedgerReads
from rag_orchestrator.conversations.listing import EVERY, Listing
from rag_orchestrator.conversations.message_items import MessageItems
from rag_orchestrator.conversations.paging import DEFAULT_PAGE_SIZE
from rag_orchestrator.conversations.table import Table, in_worker_thread
from rag_orchestrator.conversations.transcripts import S3AuditTrails, S3Transcripts
from rag_orchestrator.conversations.turn_data import Claim, TurnContext, TurnOutcome
from rag_orchestrator.conversations.usage import UsageReads
from rag_orchestrator.conversations.versions import Revision
from rag_orchestrator.domain.approvals import Decision, Resolution
from rag_orchestrator.domain.audit import AuditTrail
from rag_orchestrator.domain.budgets import Spend
from rag_orchestrator.domain.conversations import Conversation, ConversationMessage, Page
from rag_orchestrator.domain.feedback import Feedback, FeedbackEntry, Rating
from rag_orchestrator.domain.usage import UsageLine
from rag_orchestrator.tracing import NO_TRACER, Tracer


class DynamoConversationStore:
    def __init__(
        self,
        table: str,
        bucket: str,
        *,
        dynamodb: Any,
        s3: Any,
        cursor_secret: bytes,
        actor_key: bytes = b"",
        deleted_retention_days: int = 30,
        guest_ttl_hours: int = 24,
        tracer: Tracer = NO_TRACER,
    ) -> None:
        shared = Table(dynamodb, table, tracer)
        items = MessageItems(ContentOffloader(s3, bucket), timedelta(hours=guest_ttl_hours))
        self._table = shared
        self._cursors = CursorCodec(cursor_secret)
        self._conversations = DynamoConversations(shared, items, timedelta(days=deleted_retention_days))
        self._messages = DynamoMessages(shared, items, S3Transcripts(s3, bucket), self._cursors)
        self._titles = TitleWrites(shared)
        self._turns = TurnWrites(shared, items, actor_key or cursor_secret)
        self._revisions = RevisionWrites(shared, items, self._turns)
        self._approvals = ApprovalWrites(shared)
        self._usage = UsageReads(shared, actor_key or cursor_secret)
        self._ledger = LedgerReads(shared)
        self._feedback = FeedbackWrites(shared, items, self._cursors)
        self._audit = AuditReads(shared, self._cursors, S3AuditTrails(s3, bucket))

    @classmethod
    def from_settings(
        cls, settings: Settings, aws: AwsClients, tracer: Tracer = NO_TRACER
    ) -> DynamoConversationStore:
        return cls(
            settings.conversations_table or "",
            settings.transcripts_bucket or "",
            dynamodb=aws.client("dynamodb"),
            s3=aws.lazy("s3"),  # for large contents and transcripts: most turns never need it
            cursor_secret=cursor_key(settings),
            actor_key=actor_key(settings),
            deleted_retention_days=settings.deleted_retention_days,
            guest_ttl_hours=settings.guest_ttl_hours,
            tracer=tracer,
        )

    # ------------------------------------------------------------------ conversations (routes)

    @in_worker_thread
    def create(
        self, conversation: Conversation, messages: Sequence[ConversationMessage] = ()
    ) -> Conversation:
        return self._conversations.create(conversation, messages)

    @in_worker_thread
    def get(self, conversation_id: str, caller_id: str) -> Conversation:
        return self._conversations.get(conversation_id, caller_id)

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
    def update(
        self,
        conversation_id: str,
        caller_id: str,
        *,
        title: str | None = None,
        metadata: dict[str, str] | None = None,
        memory: bool | None = None,
    ) -> Conversation:
        return self._titles.update(conversation_id, caller_id, title, metadata, memory)

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
        return self._messages.page(conversation_id, caller_id, limit, cursor, all_versions)

    @in_worker_thread
    def window(self, conversation_id: str, size: int) -> list[ConversationMessage]:
        return self._messages.context(conversation_id, size).messages

    @in_worker_thread
    def soft_delete(self, conversation_id: str, caller_id: str) -> None:
        self._conversations.soft_delete(conversation_id, caller_id)

    @in_worker_thread
    def set_feedback(
        self, conversation_id: str, caller_id: str, message_id: str, feedback: Feedback | None
    ) -> None:
        self._feedback.set_feedback(conversation_id, caller_id, message_id, feedback)

    @in_worker_thread
    def feedback(
        self,
        *,
        since: datetime,
        rating: Rating | None = None,
        limit: int = DEFAULT_PAGE_SIZE,
        cursor: str | None = None,
    ) -> Page[FeedbackEntry]:
        return self._feedback.feedback(since, rating, limit, cursor)

    @in_worker_thread
    def audit(
        self, conversation_id: str, *, limit: int = DEFAULT_PAGE_SIZE, cursor: str | None = None
    ) -> AuditTrail:
        return self._audit.audit(conversation_id, limit, cursor)

    @in_worker_thread
    def usage(self, caller_id: str, day: str) -> int:
        return self._usage.usage(caller_id, day)

    @in_worker_thread
    def usage_lines(self, first: date, last: date) -> list[UsageLine]:
        return self._ledger.usage_lines(first, last)

    # ------------------------------------------------------------------ turns (the loop, the title hook)

    @in_worker_thread
    def start_turn(
        self,
        claim: Claim,
        user_message: ConversationMessage,
        client_message_id: str | None = None,
        spend: Spend | None = None,
    ) -> Resolution | None:
        return self._turns.start_turn(claim, user_message, client_message_id, spend)

    @in_worker_thread
    def context(self, conversation_id: str, size: int) -> TurnContext:
        return self._messages.context(conversation_id, size)

    @in_worker_thread
    def finish_turn(self, conversation_id: str, outcome: TurnOutcome) -> None:
        self._turns.finish_turn(conversation_id, outcome)

    @in_worker_thread
    def abort_turn(self, conversation_id: str) -> None:
        self._turns.abort_turn(conversation_id)

    @in_worker_thread
    def decide_approval(
        self, claim: Claim, approval_id: str, decision: Decision, reason: str | None
    ) -> Resolution:
        return self._approvals.decide_approval(claim, approval_id, decision, reason)

    @in_worker_thread
    def start_revision(self, claim: Claim, message_id: str, edit: ConversationMessage | None) -> Revision:
        return self._revisions.start_revision(claim, message_id, edit)

    @in_worker_thread
    def reserve(self, spend: Spend) -> None:
        self._usage.reserve(spend)

    @in_worker_thread
    def release(self, spend: Spend) -> None:
        self._usage.release(spend)

    @in_worker_thread
    def count_answer(self, spend: Spend | None, line: UsageLine, started: int) -> None:
        self._usage.count_answer(spend, line, started)

    @in_worker_thread
    def set_auto_title(self, conversation_id: str, title: str) -> bool:
        return self._titles.set_auto_title(conversation_id, title)

    @in_worker_thread
    def set_summary(self, conversation_id: str, summary: str, through: str, previous: str | None) -> bool:
        return self._titles.set_summary(conversation_id, summary, through, previous)
