"""Automatic titles (AUTO_TITLE): after a conversation's first answered turn, the AfterTurn hook asks
the model for a short title, with a small token cap, once the terminal event is out.

The extractive strategy writes no titles: the first question, cut to a phrase, is the title; so it
is when the model fails, answers late or answers nothing usable. A title the owner set meanwhile
stays: the store writes the automatic one only where there is none.
"""

from __future__ import annotations

from typing import Protocol

from rag_orchestrator.conversations.titles import clean_title, phrase_of
from rag_orchestrator.domain.conversations import Conversation
from rag_orchestrator.domain.events import FinishReason
from rag_orchestrator.domain.messages import Message, Role
from rag_orchestrator.errors import ConversationNotFound
from rag_orchestrator.loop.record import TurnRecord
from rag_orchestrator.loop.request import TurnRequest
from rag_orchestrator.observability import logger
from rag_orchestrator.providers.short_calls import short_reply
from rag_orchestrator.providers.strategies import ModelStrategy

TITLE_MAX_TOKENS = 32
TITLE_SECONDS = 3.0  # within the hook's 5 s: a late model still leaves time for the fallback's write
EXCERPT_CHARS = 1500
ANSWERED: tuple[FinishReason, ...] = ("stop", "max_iterations")
PROMPT = (
    "Write a title of at most six words for the conversation that starts with the exchange below, "
    "in the language of the question. Reply with the title only: no quotes, no full stop."
)


class TitleStore(Protocol):
    """What the title hook needs of the conversation store."""

    async def get(self, conversation_id: str, caller_id: str) -> Conversation: ...

    async def set_auto_title(self, conversation_id: str, title: str) -> bool:
        """Title a conversation that has none yet; False when it has one (set meanwhile, or gone)."""
        ...


class AutoTitle:
    def __init__(self, store: TitleStore, strategy: ModelStrategy) -> None:
        self.store = store
        self.strategy = strategy

    async def __call__(self, request: TurnRequest, record: TurnRecord) -> None:
        if record.failure is not None or record.message_id is None or record.finish_reason not in ANSWERED:
            return
        titled = record.titled  # known from the turn's window read: no read of its own
        if titled is None:
            try:
                titled = (
                    await self.store.get(request.conversation_id, request.caller.caller_id)
                ).title is not None
            except ConversationNotFound:
                return  # deleted meanwhile
        if titled:
            return
        title, source = await self.title(request.conversation_id, request.message, record.content), "model"
        if title is None:
            title, source = phrase_of(request.message), "question"
        if title and await self.store.set_auto_title(request.conversation_id, title):
            logger.info(
                "conversation titled", extra={"conversation_id": request.conversation_id, "source": source}
            )

    async def title(self, conversation_id: str, question: str, answer: str) -> str | None:
        """The model's title for the exchange; None with the extractive strategy or on any failure."""
        if self.strategy.metadata.provider == "extractive":
            return None
        messages = [
            Message(role=Role.SYSTEM, content=PROMPT),
            Message(
                role=Role.USER,
                content=f"Question: {question[:EXCERPT_CHARS]}\n\nAnswer: {answer[:EXCERPT_CHARS]}",
            ),
        ]
        text = await short_reply(self.strategy, conversation_id, messages, TITLE_MAX_TOKENS, TITLE_SECONDS)
        return clean_title(text) if text is not None else None
