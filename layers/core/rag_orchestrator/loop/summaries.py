"""The running summary (compaction, docs/memory.md): after an answered turn whose history exceeds
CONTEXT_TOKEN_BUDGET, the AfterTurn hook folds the messages older than the kept window into the
conversation's summary with one short model call, once the terminal event is out.

The extractive strategy writes no summaries with a model: it keeps the key sentences (each folded
question's and answer's first sentence); so does a failing, late or empty model call. The store writes
the summary only over the one it was built on, so of two writers one wins and neither loses messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from rag_orchestrator.domain.conversations import ConversationMessage
from rag_orchestrator.domain.messages import Message, Role
from rag_orchestrator.loop.compaction import SUMMARY_MAX_CHARS, select
from rag_orchestrator.loop.record import TurnRecord
from rag_orchestrator.loop.request import TurnRequest
from rag_orchestrator.loop.titles import ANSWERED
from rag_orchestrator.observability import logger
from rag_orchestrator.providers.short_calls import short_reply
from rag_orchestrator.providers.strategies import ModelStrategy
from rag_orchestrator.sanitize import truncate
from rag_orchestrator.text.sentences import segments

SUMMARY_MAX_TOKENS = 400
SUMMARY_SECONDS = 3.5  # within the hook's 5 s: a late model still leaves time for the fallback's write
EXCERPT_CHARS = 12_000  # of the folded messages, newest kept, sent to the model
PROMPT = (
    "Update the running summary of a conversation with the messages below. Keep what later answers "
    "need: the user's goals, facts, names, numbers, decisions and open questions. At most 150 words, "
    "in the language of the conversation. Reply with the summary only."
)
SPEAKERS = {Role.USER: "User", Role.ASSISTANT: "Assistant"}


class SummaryStore(Protocol):
    """What the compaction hook needs of the conversation store."""

    async def set_summary(
        self, conversation_id: str, summary: str, through: str, previous: str | None
    ) -> bool:
        """Store the summary of the messages through `through`, only where the stored one is still the
        one through `previous`; False when it is not (written meanwhile), or the conversation is gone."""
        ...


def spoken(messages: Sequence[ConversationMessage]) -> list[tuple[str, str]]:
    """The questions and answers among `messages`, with who said them (tool traffic left out)."""
    return [(SPEAKERS[m.role], m.content) for m in messages if m.role in SPEAKERS and m.content.strip()]


def key_sentences(summary: str | None, folded: Sequence[ConversationMessage]) -> str:
    """The extractive summary: the summary so far, then each folded message's first sentence; the
    oldest lines go first when it outgrows SUMMARY_MAX_CHARS."""
    lines = summary.splitlines() if summary else []
    for speaker, content in spoken(folded):
        first = next((s.text for s in segments(content) if s.kind == "prose"), "")
        if first:
            lines.append(f"{speaker}: {truncate(first, 300)}")
    while len("\n".join(lines)) > SUMMARY_MAX_CHARS and len(lines) > 1:
        lines.pop(0)
    return truncate("\n".join(lines), SUMMARY_MAX_CHARS)


class Compaction:
    def __init__(self, store: SummaryStore, strategy: ModelStrategy, budget: int) -> None:
        self.store = store
        self.strategy = strategy
        self.budget = budget

    async def __call__(self, request: TurnRequest, record: TurnRecord) -> None:
        if record.failure is not None or record.message_id is None or record.finish_reason not in ANSWERED:
            return
        fold = select(record.summary, [*record.history, *record.pending], self.budget)
        if fold is None:
            return
        summary, source = await self.summarize(request.conversation_id, record.summary, fold.folded), "model"
        if summary is None:
            summary, source = key_sentences(record.summary, fold.folded), "key sentences"
        through = fold.folded[-1].message_id
        if summary and await self.store.set_summary(
            request.conversation_id, summary, through, record.summarized_through
        ):
            logger.info(
                "conversation compacted",
                extra={
                    "conversation_id": request.conversation_id,
                    "folded": len(fold.folded),
                    "source": source,
                },
            )

    async def summarize(
        self, conversation_id: str, summary: str | None, folded: Sequence[ConversationMessage]
    ) -> str | None:
        """The model's summary; None with the extractive strategy or on any failure."""
        if self.strategy.metadata.provider == "extractive":
            return None
        transcript = "\n".join(f"{speaker}: {content}" for speaker, content in spoken(folded))[
            -EXCERPT_CHARS:
        ]
        messages = [
            Message(role=Role.SYSTEM, content=PROMPT),
            Message(
                role=Role.USER, content=f"Summary so far: {summary or '(none)'}\n\nMessages:\n{transcript}"
            ),
        ]
        text = await short_reply(
            self.strategy, conversation_id, messages, SUMMARY_MAX_TOKENS, SUMMARY_SECONDS
        )
        return truncate(text.strip(), SUMMARY_MAX_CHARS) if text and text.strip() else None
