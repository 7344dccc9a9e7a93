"""The record of one turn: the messages it will store, the passages it found, its counters and outcome,
and from them the turn's audit record (domain/audit.py). The route answering a turn whole and the
after-turn hooks read it once the turn has ended."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rag_orchestrator.conversations.versions import Superseded
from rag_orchestrator.domain.approvals import HeldCall, Resolution, request_audit
from rag_orchestrator.domain.audit import Outcome, TurnFacts, turn_entry
from rag_orchestrator.domain.base import utcnow
from rag_orchestrator.domain.conversations import ConversationMessage
from rag_orchestrator.domain.events import FinishReason
from rag_orchestrator.domain.messages import Message, Role
from rag_orchestrator.domain.passages import Key, Passage, drawn_on
from rag_orchestrator.errors import RagError
from rag_orchestrator.loop.request import TurnRequest
from rag_orchestrator.providers.events import Usage


@dataclass
class TurnRecord:
    conversation_id: str
    pending: list[ConversationMessage] = field(default_factory=list)  # stored when the turn ends
    passages: dict[Key, Passage] = field(default_factory=dict)  # every passage found, first find kept
    iterations: int = 0
    tokens: int = 0
    input_tokens: int = 0  # of every model call, for the usage report
    output_tokens: int = 0
    tool_calls: int = 0
    tool_success: dict[str, bool] = field(default_factory=dict)  # by toolCallId
    # The outcome, once the turn has ended:
    content: str = ""
    message_id: str | None = None
    sources: list[Passage] = field(default_factory=list)
    finish_reason: FinishReason = "stop"
    failure: RagError | None = None  # the safe error a REST caller gets
    superseded: list[Superseded] = field(default_factory=list)  # earlier versions it made (a revision)
    held: HeldCall | None = None  # the tool call the turn left waiting for approval
    titled: bool | None = None  # whether the conversation had a title when the turn read it; None: not read
    decided: Resolution | None = None  # the decision the turn acted on (a continuation's, or an expiry)
    history: list[ConversationMessage] = field(default_factory=list)  # the window it read, after the summary
    summary: str | None = None  # the conversation's running summary as the turn read it
    summarized_through: str | None = None

    def count(self, usage: Usage) -> None:
        """Add a model call's tokens to the turn's (every call it made: its answer's, a follow-up's)."""
        self.tokens += usage.total_tokens
        self.input_tokens += usage.prompt_tokens
        self.output_tokens += usage.completion_tokens

    def add(
        self, message: Message, token_count: int | None = None, *, success: bool | None = None
    ) -> ConversationMessage:
        """Keep a message of the turn for storage; tool calls count as they are added, a tool
        result's `success` is kept for the audit record."""
        stored = ConversationMessage.of(self.conversation_id, message, token_count)
        self.pending.append(stored)
        self.tool_calls += len(message.tool_calls or ())
        if success is not None and message.tool_call_id:
            self.tool_success[message.tool_call_id] = success
        return stored

    def remember(self, passages: Iterable[Passage]) -> None:
        for passage in passages:
            self.passages.setdefault(passage.key, passage)

    def sources_of(self, answer: str) -> list[Passage]:
        """The passages the answer draws on (its citations, else all found); none when nothing was found."""
        found = list(self.passages.values())
        return drawn_on(answer, found) if found else []

    def to_store(self, interrupted: bool) -> list[ConversationMessage]:
        """What to store: of an interrupted turn only the tool calls whose every result was recorded."""
        if not interrupted:
            return self.pending
        answered = {m.tool_call_id for m in self.pending if m.role is Role.TOOL}
        return [
            m
            for m in self.pending
            if m.role is not Role.ASSISTANT or not m.tool_calls or {c.id for c in m.tool_calls} <= answered
        ]

    def audit(
        self,
        request: TurnRequest,
        question: ConversationMessage | None,
        stored: Sequence[ConversationMessage],
        *,
        model: str,
        interrupted: bool,
    ) -> dict[str, Any]:
        """The audit entry of what the turn stores: failed (with its safe error), interrupted, or
        completed (with its finish reason and answer)."""
        outcome: Outcome = "failed" if self.failure else "interrupted" if interrupted else "completed"
        completed = outcome == "completed"
        entry = turn_entry(
            TurnFacts(
                conversation_id=self.conversation_id,
                actor=request.caller,
                request_id=request.request_id,
                client_request_id=request.client_request_id,
                moment=utcnow(),
                question=question,
                stored=stored,
                tool_success=self.tool_success,
                answer=next((m for m in stored if m.message_id == self.message_id), None)
                if completed
                else None,
                model=model,
                tokens=self.tokens,
                iterations=self.iterations,
                outcome=outcome,
                finish_reason=self.finish_reason if completed else None,
                error=self.failure.error if self.failure else None,
            )
        )
        if self.held is not None:
            entry["approvalRequested"] = request_audit(self.held)
        if self.decided is not None:
            entry["approvalDecision"] = self.decided.audit()
        return entry
