"""The Orchestrator: the parts a turn needs, and `begin()`, which claims a turn.

`begin()` checks the attachments the request names, stores the user message and takes the
conversation's turn lock, so it raises 404/409 before any event is sent; the ActiveTurn it returns
(loop/turn.py) runs the turn.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from rag_orchestrator.config import Settings
from rag_orchestrator.conversations.store import TurnStore
from rag_orchestrator.domain.conversations import ConversationMessage
from rag_orchestrator.domain.messages import Message, Role
from rag_orchestrator.loop.attachments import AttachmentReading
from rag_orchestrator.loop.control import TurnControl
from rag_orchestrator.loop.finalizers import DirectFinalizer, Finalizer
from rag_orchestrator.loop.ports import (
    AfterTurn,
    AttachmentSource,
    KnowledgeSearch,
    ToolChooser,
    Tools,
    TurnRequest,
)
from rag_orchestrator.loop.prelude import Prelude
from rag_orchestrator.loop.turn import ActiveTurn
from rag_orchestrator.providers.strategies import ModelStrategy
from rag_orchestrator.retrieval.embedders import Embedder


class Orchestrator:
    def __init__(
        self,
        *,
        store: TurnStore,
        strategy: ModelStrategy,
        tools: Tools,
        settings: Settings,
        choose_tools: ToolChooser,
        search: KnowledgeSearch | None = None,
        finalizer: Finalizer | None = None,
        after_turn: Sequence[AfterTurn] = (),
        attachments: AttachmentSource | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        self.store = store
        self.strategy = strategy
        self.tools = tools
        self.settings = settings
        self.choose_tools = choose_tools
        self.search = search
        self.finalizer = finalizer or DirectFinalizer()
        self.after_turn = tuple(after_turn)
        self.attachments = attachments
        self.embedder = embedder  # embeds the message once for tool selection and search

    async def begin(self, request: TurnRequest) -> ActiveTurn:
        """Store the user message and take the turn lock; raises ConversationNotFound or Conflict
        (and, checked first, AttachmentNotFound or AttachmentNotReady)."""
        attachments = await AttachmentReading.check(self.attachments, request)
        control = TurnControl(request.deadline or time.time() + self.settings.turn_default_budget_seconds)
        user = ConversationMessage.of(
            request.conversation_id,
            Message(role=Role.USER, content=request.message),
            client_message_id=request.client_message_id,
            metadata=request.metadata,
            attachment_ids=list(request.attachment_ids),
        )
        prelude = Prelude(self, request)  # runs beside the claim (loop/prelude.py)
        try:
            await self.store.start_turn(
                request.conversation_id,
                request.caller.caller_id,
                user,
                request.client_message_id,
                lease_seconds=control.lease_seconds(self.settings.turn_deadline_margin_seconds),
            )
        except BaseException:
            prelude.cancel()
            raise
        return ActiveTurn(self, request, user, control, prelude, attachments)
