"""Follow-up questions searched with their conversation (docs/retrieval.md, "Follow-up questions").

On a turn after the first, the chat's initial search looks for what the message means in its conversation,
not for its words alone ("And on Saturdays?" finds nothing by itself):

- with a model strategy, one short call rewrites the message as a standalone question from the last
  exchanges (at most CONDENSE_SECONDS; on any failure, the way below);
- with the extractive strategy, which has no model, the earlier questions' content words join the message
  when it points back to them (`text/follow_ups.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from rag_orchestrator.domain.messages import Message, Role
from rag_orchestrator.domain.passages import CITATION
from rag_orchestrator.providers.short_calls import ShortCall, short_reply
from rag_orchestrator.retrieval.query_vector import MAX_QUERY_CHARS
from rag_orchestrator.text.follow_ups import previous_question, standalone

if TYPE_CHECKING:
    from rag_orchestrator.providers.strategies import ModelStrategy

EXCHANGES = 2  # the last exchanges the model reads
EXCERPT_CHARS = 600  # of each message it reads
CONDENSE_MAX_TOKENS = 80
CONDENSE_SECONDS = 4.0
PROMPT = (
    "Rewrite the user's last message as one standalone search query for a knowledge base, using the "
    "conversation before it for what the message leaves out (names, places, the topic). Keep the language "
    "of the message. If it already stands alone, repeat it unchanged. Reply with the query only."
)


class Said(Protocol):
    """A message of a conversation as a follow-up reads it (a stored message, or a model's)."""

    @property
    def role(self) -> Role: ...

    @property
    def content(self) -> str: ...


def earlier_questions(message: str, window: Sequence[Said]) -> list[str]:
    """The user's questions before this message in the window, oldest first."""
    asked = [m.content.strip() for m in window if m.role is Role.USER and m.content.strip()]
    if asked and asked[-1] == message.strip():  # the window read after the claim holds the message itself
        asked.pop()
    return asked


class FollowUps:
    """Makes a chat message a search query of its own; built once, with the turn's model strategy."""

    def __init__(self, model: Callable[[], ModelStrategy] | None = None) -> None:
        # The strategy is asked for on the first follow-up, not here: the stream function builds this at
        # start-up, and the strategy would fetch its API key (an SSM call) before the function listens.
        self._model = model

    async def query(self, message: str, window: Sequence[Said], calls: list[ShortCall] | None = None) -> str:
        """What to search for this message; the message itself on a conversation's first turn. The
        model's call, when one is made, is appended to `calls` (its turn counts and traces it)."""
        earlier = earlier_questions(message, window)
        if not earlier:
            return message
        words = standalone(message, previous_question(earlier))
        strategy = self._model() if self._model is not None else None
        if strategy is None or strategy.metadata.provider == "extractive":
            return words
        return await self._condensed(strategy, message, window, calls) or words

    async def _condensed(
        self, strategy: ModelStrategy, message: str, window: Sequence[Said], calls: list[ShortCall] | None
    ) -> str | None:
        exchanges = [m for m in window if m.role in (Role.USER, Role.ASSISTANT) and m.content.strip()]
        if exchanges and exchanges[-1].role is Role.USER and exchanges[-1].content.strip() == message.strip():
            exchanges.pop()
        lines = [
            f"{m.role.value}: {' '.join(CITATION.sub('', m.content).split())[:EXCERPT_CHARS]}"
            for m in exchanges[-2 * EXCHANGES :]
        ]
        conversation = "\n".join(lines)
        messages = [
            Message(role=Role.SYSTEM, content=PROMPT),
            Message(role=Role.USER, content=f"{conversation}\n\nLast message: {message[:EXCERPT_CHARS]}"),
        ]
        text = await short_reply(
            strategy, "follow-up", messages, CONDENSE_MAX_TOKENS, CONDENSE_SECONDS, calls
        )
        if text is None:
            return None
        query = " ".join(text.split()).strip("\"'“”")[:MAX_QUERY_CHARS]
        return query or None
