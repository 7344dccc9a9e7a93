"""The record of one turn: the messages it will store, the passages it found, its counters and outcome."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from rag_orchestrator.domain.conversations import ConversationMessage
from rag_orchestrator.domain.events import FinishReason
from rag_orchestrator.domain.messages import Message, Role
from rag_orchestrator.domain.passages import Key, Passage, drawn_on
from rag_orchestrator.errors import RagError


@dataclass
class TurnRecord:
    conversation_id: str
    pending: list[ConversationMessage] = field(default_factory=list)  # stored when the turn ends
    passages: dict[Key, Passage] = field(default_factory=dict)  # every passage found, first find kept
    iterations: int = 0
    tokens: int = 0
    tool_calls: int = 0
    # The outcome, once the turn has ended:
    content: str = ""
    message_id: str | None = None
    sources: list[Passage] = field(default_factory=list)
    finish_reason: FinishReason = "stop"
    failure: RagError | None = None  # the safe error a REST caller gets

    def add(self, message: Message, token_count: int | None = None) -> ConversationMessage:
        """Keep a message of the turn for storage; tool calls count as they are added."""
        stored = ConversationMessage.of(self.conversation_id, message, token_count)
        self.pending.append(stored)
        self.tool_calls += len(message.tool_calls or ())
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
