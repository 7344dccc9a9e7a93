"""Regenerate and edit: a turn that answers the last exchange again (conversations/versions.py).

`begin_revision` claims the turn like `Orchestrator.begin`, but stores nothing yet: an edit's new
question is stored with the answer, and the exchange it replaces is superseded in that same write.
"""

from __future__ import annotations

import dataclasses

from rag_orchestrator.domain.conversations import ConversationMessage
from rag_orchestrator.domain.messages import Message, Role
from rag_orchestrator.errors import RagError
from rag_orchestrator.loop.attachments import AttachmentReading
from rag_orchestrator.loop.orchestrator import Orchestrator
from rag_orchestrator.loop.ports import TurnRequest
from rag_orchestrator.loop.prelude import Prelude
from rag_orchestrator.loop.turn import ActiveTurn
from rag_orchestrator.observability import logger


async def begin_revision(
    orchestrator: Orchestrator, request: TurnRequest, message_id: str, *, edit: bool
) -> ActiveTurn:
    """Take the turn lock for the last exchange, which `message_id` names; with `edit`,
    `request.message` replaces its question. Raises 404 or 409 before any event is sent."""
    control, spend = orchestrator.control(request), orchestrator.spend(request)
    new_question, attachments = None, None
    if edit:  # the new question's files are checked before anything is claimed, as in begin()
        attachments = await AttachmentReading.check(orchestrator.attachments, request)
        message = Message(role=Role.USER, content=request.message)
        new_question = ConversationMessage.of(
            request.conversation_id,
            message,
            metadata=request.metadata,
            attachment_ids=list(request.attachment_ids),
        )
    async with orchestrator.holding(spend):  # a revision spends like any turn (docs/usage.md)
        revision = await orchestrator.store.start_revision(
            orchestrator.claim(request, control), message_id, new_question
        )
    question = revision.question
    assert question is not None  # a revision always answers a question
    ids = tuple(question.attachment_ids or ())
    answering = dataclasses.replace(request, message=question.content, attachment_ids=ids)
    if not edit:
        try:  # a regenerated question keeps its files, checked now that the lock is held
            attachments = await AttachmentReading.check(orchestrator.attachments, answering)
        except RagError as exc:
            logger.warning("a revised question's attachments are gone", extra={"error": exc.message})
            attachments = None  # answer the question without them rather than hold the lock
    prelude = Prelude(orchestrator, answering)
    return ActiveTurn(orchestrator, answering, question, control, prelude, attachments, revision, spend=spend)
