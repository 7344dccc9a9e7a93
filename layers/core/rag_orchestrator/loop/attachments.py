"""A turn's attachments (docs/attachments.md, section 5): checked by begin(), read in the turn, and
written into the model's view of the window.

begin() checks them before it writes anything, so a refusal is a plain HTTP error and leaves no user
message and no lock: another caller's or conversation's attachment is a 404, one that FAILED or was
never uploaded a 409. One uploaded but not READY yet (no S3 event so far, or being read) is read in
the turn after a StatusUpdate; if that fails, the turn answers without it and a StatusUpdate says so.

The stored user message keeps the ids only. The model sees the current message with its segments
(domain/attachment_formats.py) and earlier messages with a note of their ids: the window is not
re-read, so a turn costs the same requests however many attachments its window holds, and the
segments of earlier attachments stay reachable through `rag_search` (they are conversation memory).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from rag_orchestrator.domain.attachment_formats import (
    MAX_FILE_LABEL,
    attachments_block,
    earlier_note,
    segment_passages,
    with_attachments,
)
from rag_orchestrator.domain.attachments import Attachment, AttachmentStatus
from rag_orchestrator.domain.conversations import ConversationMessage
from rag_orchestrator.domain.fences import Fence
from rag_orchestrator.domain.messages import Message, Role
from rag_orchestrator.domain.passages import Passage
from rag_orchestrator.errors import RagError, StorageUnavailable
from rag_orchestrator.loop.ports import AttachmentSource
from rag_orchestrator.loop.request import TurnRequest
from rag_orchestrator.observability import logger
from rag_orchestrator.sanitize import sanitize_metadata

READY = AttachmentStatus.READY
Status = tuple[str, str | None]  # a StatusUpdate's status and details


def _name(attachment: Attachment) -> str:
    return sanitize_metadata(attachment.file_name, MAX_FILE_LABEL)


class AttachmentReading:
    """What begin() checked, READY or read in the turn: `read` and `unread` once `statuses()` has run."""

    def __init__(self, source: AttachmentSource | None, checked: Sequence[Attachment]) -> None:
        self._source = source
        self._checked = list(checked)
        self.read = [a for a in checked if a.status is READY]
        self.unread: list[Attachment] = []

    @classmethod
    async def check(cls, source: AttachmentSource | None, request: TurnRequest) -> AttachmentReading:
        """The attachments the request names, checked (404/409), to read in the turn."""
        if not request.attachment_ids:
            return cls(source, [])
        if source is None:
            raise StorageUnavailable("Attachments are not configured")
        ids = request.attachment_ids
        return cls(source, await source.check(request.caller.caller_id, request.conversation_id, ids))

    async def statuses(self, wait: Callable[[Awaitable[Any]], Awaitable[Any]]) -> AsyncIterator[Status]:
        """Read the attachments not READY (at once); a status before, and one for each that failed.
        The reading is awaited through `wait` (the turn's control): a stop cuts the turn, not the reading."""
        waiting = [a for a in self._checked if a.status is not READY]
        if not waiting or self._source is None:
            return
        for attachment in waiting:
            yield f"Reading {_name(attachment)}", "an attachment not processed yet"
        outcomes = await wait(asyncio.gather(*(self._read(a) for a in waiting)))
        done = {a.attachment_id: outcome for a, outcome in zip(waiting, outcomes, strict=True)}
        self.read, self.unread = [], []
        for attachment in self._checked:
            outcome = done.get(attachment.attachment_id, attachment)
            if isinstance(outcome, Attachment):
                self.read.append(outcome)
            else:
                self.unread.append(attachment)
                yield (
                    f"Could not read {_name(attachment)}",
                    f"continuing without it: {outcome.public_message}",
                )

    async def _read(self, attachment: Attachment) -> Attachment | RagError:
        assert self._source is not None
        try:
            return await self._source.read(attachment)
        except RagError as failure:
            logger.warning(
                "attachment not read in the turn",
                extra={"attachment_id": attachment.attachment_id, "reason": failure.message},
            )
            return failure

    def passages(self) -> list[Passage]:
        """The segments the model is shown, as passages it may cite (they become Sources)."""
        return [p for attachment in self.read for p in segment_passages(attachment)]


def model_view(
    window: Sequence[ConversationMessage],
    question_id: str,
    reading: AttachmentReading,
    limit: int,
    fence: Fence,
) -> list[Message]:
    """The window as the model reads it: the question with its attachments' text (enclosed by the
    turn's fence: the files' words are data), earlier messages with a note of theirs."""
    view = []
    for stored in window:
        message = stored.to_message()
        if stored.role is Role.USER and stored.attachment_ids:
            if stored.message_id == question_id:
                block = fence.enclose(attachments_block(reading.read, reading.unread, limit), "attachments")
            else:
                block = earlier_note(stored.attachment_ids)
            message = message.model_copy(update={"content": with_attachments(message.content, block)})
        view.append(message)
    return view
