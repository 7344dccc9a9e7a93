"""The body the AI SDK's `useChat` (DefaultChatTransport, `ai` 6 and 7) posts to …/ui-stream.

`{id, messages, trigger, messageId}` plus the fields an app adds with `body` (`contextType`, `context`,
`metadata`, `attachmentIds`, and `callerId` as older clients send it). The service keeps the history itself, so only the last message is read:

- a user message: its text parts are the turn's message; its id is the turn's clientMessageId, so a
  resent message starts no second turn. Its file parts name attachments uploaded beforehand, by their
  status URL (`…/conversations/{id}/attachments/{attachmentId}`): files never pass through this route.
- an assistant message holding a tool part in state `approval-responded` (`addToolApprovalResponse`):
  the decision on that held call, which the turn then continues with.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from rag_orchestrator.domain.approvals import Decision
from rag_orchestrator.domain.attachments import MAX_PER_TURN, well_formed_ids
from rag_orchestrator.domain.conversations import (
    MAX_ID_LENGTH,
    MAX_MESSAGE_CHARS,
    MAX_METADATA_ENTRIES,
    ChatRequest,
    joined_context,
)
from rag_orchestrator.domain.text import ClientBody, plain_label, plain_labels, plain_optional

FILE_REFUSED = (
    "messages: a file part's url must be an attachment's status URL (…/conversations/{id}/attachments/"
    "{attachmentId}); upload files with the presigned POST of POST …/attachments first"
)
NOT_A_TURN = (
    "messages: the last message must be the user's, or the assistant's holding one tool part in "
    "state approval-responded (an approval answered with addToolApprovalResponse)"
)
_ATTACHMENT_PATH = re.compile(r"/api/v1/chat/conversations/[^/]+/attachments/([^/]+)")
RESPONDED = "approval-responded"


class UIApproval(BaseModel):
    """A tool part's `approval`: the held call's approvalId, and the answer once given."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    id: str = Field(min_length=1, max_length=64)
    approved: bool | None = None
    reason: str | None = Field(None, max_length=2000)


class UIPart(BaseModel):
    """A part of an AI SDK UI message; text, file and answered tool parts are read, the rest ignored."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    type: str = Field(min_length=1, max_length=100)
    text: str | None = None
    url: str | None = Field(None, max_length=2048)
    state: str | None = Field(None, max_length=40)
    approval: UIApproval | None = None

    def attachment_id(self) -> str:
        """A file part's attachment, named by its status URL (absolute or a path); ValueError else."""
        found = _ATTACHMENT_PATH.fullmatch(urlsplit(self.url or "").path)
        if not found:
            raise ValueError(FILE_REFUSED)
        return found.group(1)

    @property
    def answered(self) -> bool:
        """A tool part whose approval the user answered."""
        tool = self.type == "dynamic-tool" or self.type.startswith("tool-")
        return (
            tool
            and self.state == RESPONDED
            and self.approval is not None
            and self.approval.approved is not None
        )


class UIMessage(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)

    id: str = Field(min_length=1, max_length=MAX_ID_LENGTH)
    role: Literal["system", "user", "assistant"]
    parts: list[UIPart] = Field(max_length=1000)

    _id = field_validator("id")(plain_label)  # the last one's is the turn's clientMessageId


@dataclass(frozen=True, slots=True)
class Answered:
    """The decision an approval response carries."""

    approval_id: str
    decision: Decision
    reason: str | None


class UIChatRequest(ClientBody):
    # Unknown fields are ignored rather than refused: the SDK's body may grow, and the caller is never
    # read from a body anyway. Every string in it follows the one rule (domain/text.py), as on every chat body.
    model_config = ClientBody.model_config | {"extra": "ignore"}

    id: str | None = Field(None, max_length=MAX_ID_LENGTH, description="The SDK's chat id (not used)")
    messages: list[UIMessage] = Field(min_length=1, description="The chat; only the last message is read")
    trigger: Literal["submit-message", "regenerate-message"] = "submit-message"
    message_id: str | None = Field(
        None, max_length=MAX_ID_LENGTH, description="The message sendMessage replaces (an edit), or continues"
    )
    context_type: str | None = Field(None, max_length=64)
    context: dict[str, Any] | None = None
    metadata: dict[str, str] = Field(default_factory=dict, max_length=MAX_METADATA_ENTRIES)
    attachment_ids: list[str] = Field(  # at most MAX_PER_TURN once repeats are dropped (well_formed_ids)
        default_factory=list,
        description=f"As on the native routes: at most {MAX_PER_TURN}, a repeat sent once",
    )
    caller_id: str | None = Field(
        None,
        max_length=MAX_ID_LENGTH,
        description="As older clients send it: the authenticated caller's, else 403",
    )
    user_id: str | None = Field(None, max_length=MAX_ID_LENGTH, description="Joins the turn's context")
    account_id: str | None = Field(None, max_length=MAX_ID_LENGTH, description="Joins the turn's context")

    _labels = field_validator("id", "message_id", "context_type", "caller_id", "user_id", "account_id")(
        plain_optional
    )
    _keys = field_validator("metadata")(plain_labels)

    @model_validator(mode="after")
    def _a_turn(self) -> UIChatRequest:
        last = self.messages[-1]
        if last.role == "assistant":
            if len([p for p in last.parts if p.answered]) != 1 or self.trigger != "submit-message":
                raise ValueError(NOT_A_TURN)
            return self
        if last.role != "user":
            raise ValueError(NOT_A_TURN)
        text = self.text()
        if not text.strip():
            raise ValueError("messages: the last message has no text part")
        if len(text) > MAX_MESSAGE_CHARS:
            raise ValueError(f"messages: the last message's text exceeds {MAX_MESSAGE_CHARS} characters")
        files = [part.attachment_id() for part in last.parts if part.type == "file"]
        self.attachment_ids = well_formed_ids([*self.attachment_ids, *files])
        return self

    def text(self) -> str:
        return "".join(p.text or "" for p in self.messages[-1].parts if p.type == "text")

    def answered(self) -> Answered | None:
        """The approval the last message answers; None for a user message."""
        part = next((p for p in self.messages[-1].parts if p.answered), None)
        if part is None or part.approval is None:
            return None
        approval = part.approval
        reason = (approval.reason or "").strip() or None
        return Answered(approval.id, "approve" if approval.approved else "deny", reason)

    @property
    def edits(self) -> bool:
        """sendMessage({text, messageId}): the user message it names is replaced."""
        return self.trigger == "submit-message" and self.message_id == self.messages[-1].id

    def chat_request(self) -> ChatRequest:
        return ChatRequest(
            message=self.text(),
            context_type=self.context_type,
            context=joined_context(self.context, self.user_id, self.account_id),
            metadata=self.metadata,
            client_message_id=self.messages[-1].id,
            attachment_ids=self.attachment_ids,
        )
