"""Versions of the last exchange: what a regenerate or an edit replaces, and how the turn that does it
reads, stores and supersedes (docs/conversations.md).

A store's `start_revision` claims the turn and returns a Revision naming the last exchange; the turn
leaves that exchange out of the model's context, and its `finish_turn` marks it `supersededBy` the
new messages in the same write that stores them. A revision that produced no answer stores no
message and supersedes nothing: the exchange stays as it was. A plain turn's Revision (`PLAIN`)
changes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from rag_orchestrator.domain.conversations import ConversationMessage
from rag_orchestrator.domain.messages import Role

Kind = Literal["regenerate", "edit"]


@dataclass(frozen=True, slots=True)
class Superseded:
    """A message that becomes an earlier version; `ref` is where the store keeps it (a sort key)."""

    message_id: str
    superseded_by: str
    ref: str | None = None


@dataclass(frozen=True, slots=True)
class StoredMessage:
    message: ConversationMessage
    ref: str | None = None


@dataclass(frozen=True)
class Revision:
    """What a turn replaces. The default replaces nothing: a plain turn."""

    kind: Kind | None = None
    question: ConversationMessage | None = None  # the user message the turn answers
    replaced: tuple[StoredMessage, ...] = field(default=())  # the exchange's messages, oldest first

    @property
    def new_question(self) -> ConversationMessage | None:
        """An edit's user message, stored by finish_turn (a plain turn's is stored by start_turn)."""
        return self.question if self.kind == "edit" else None

    def history(self, messages: Sequence[ConversationMessage]) -> list[ConversationMessage]:
        """The model's context: the window without the replaced exchange, ending in the question."""
        if self.kind is None or self.question is None:
            return list(messages)
        gone = {s.message.message_id for s in self.replaced} | {self.question.message_id}
        return [m for m in messages if m.message_id not in gone] + [self.question]

    def stored(
        self, messages: Sequence[ConversationMessage], answer_id: str | None
    ) -> list[ConversationMessage]:
        """What finish_turn stores: a revision without an answer stores nothing."""
        if self.kind is None:
            return list(messages)
        if answer_id is None:
            return []
        new = self.new_question
        return [new, *messages] if new is not None else list(messages)

    def superseded(self, answer_id: str | None) -> list[Superseded]:
        """The replaced messages once there is an answer: the question by the new question, the rest
        (the answer and the tool calls that led to it) by the new answer."""
        if self.kind is None or answer_id is None or self.question is None:
            return []
        return [
            Superseded(
                s.message.message_id,
                self.question.message_id if s.message.role is Role.USER else answer_id,
                s.ref,
            )
            for s in self.replaced
        ]

    def question_tokens(self, answer_id: str | None) -> int:
        """An edit's stored question, counted by finish_turn (start_turn counts a plain turn's)."""
        new = self.new_question
        return (new.token_count or 0) if new is not None and answer_id is not None else 0

    def audited(self, entry: dict[str, Any], answer_id: str | None) -> dict[str, Any]:
        """The turn's audit entry, naming what it superseded."""
        if self.kind is None:
            return entry
        return entry | {
            "revision": self.kind,
            "supersedes": [s.message_id for s in self.superseded(answer_id)],
        }


PLAIN = Revision()


def last_exchange(newest_first: Sequence[StoredMessage]) -> list[StoredMessage] | None:
    """The last user message and what followed it, oldest first; None without a user message."""
    for index, stored in enumerate(newest_first):
        if stored.message.role is Role.USER:
            return list(reversed(newest_first[: index + 1]))
    return None


def revision(
    exchange: Sequence[StoredMessage], message_id: str, edit: ConversationMessage | None
) -> Revision | None:
    """The revision of `exchange` asked for through `message_id` (any message of it); None when the
    message is not in it."""
    if not any(s.message.message_id == message_id for s in exchange):
        return None
    question, *answer = exchange
    if edit is not None:
        return Revision("edit", edit, tuple(exchange))
    return Revision("regenerate", question.message, tuple(answer))
