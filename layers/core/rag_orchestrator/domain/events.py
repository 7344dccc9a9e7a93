"""Stream events sent to clients (docs/streams.md): a tagged union on `type`."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter

from rag_orchestrator.domain.base import CamelModel, utcnow
from rag_orchestrator.domain.passages import SourceWithSnippet

# Why a turn ended: the model answered; it was still calling tools when the iteration cap was
# reached; the caller cancelled it; its function's time ran out; a tool call waits for approval.
FinishReason = Literal["stop", "max_iterations", "cancelled", "deadline", "awaiting_approval"]


class _Event(CamelModel):
    conversation_id: str
    turn_id: str | None = None  # set on every event of a turn (docs/streams.md)
    timestamp: datetime = Field(default_factory=utcnow)


class StatusUpdate(_Event):
    type: Literal["StatusUpdate"] = "StatusUpdate"
    status: str
    details: str | None = None


class ToolCallStart(_Event):
    type: Literal["ToolCallStart"] = "ToolCallStart"
    tool_name: str
    tool_call_id: str
    arguments: dict[str, Any]


class ApprovalRequested(_Event):
    """A tool call held for its caller's decision (docs/approvals.md); the turn then ends awaiting_approval."""

    type: Literal["ApprovalRequested"] = "ApprovalRequested"
    approval_id: str
    tool_name: str
    tool_call_id: str
    arguments: dict[str, Any]
    expires_at: datetime


class ToolCallResult(_Event):
    type: Literal["ToolCallResult"] = "ToolCallResult"
    tool_name: str
    tool_call_id: str
    result: str
    success: bool


class ResponseChunk(_Event):
    type: Literal["ResponseChunk"] = "ResponseChunk"
    content: str


class Preview(_Event):
    type: Literal["Preview"] = "Preview"
    preview_type: str
    payload: Any


class Sources(_Event):
    type: Literal["Sources"] = "Sources"
    sources: list[SourceWithSnippet]


class Completed(_Event):
    type: Literal["Completed"] = "Completed"
    iterations_used: int
    tokens_used: int
    message_id: str | None = None
    finish_reason: FinishReason = "stop"


class Error(_Event):
    type: Literal["Error"] = "Error"
    error: str
    details: str | None = None


StreamEvent = Annotated[
    StatusUpdate
    | ToolCallStart
    | ApprovalRequested
    | ToolCallResult
    | ResponseChunk
    | Preview
    | Sources
    | Completed
    | Error,
    Field(discriminator="type"),
]
TERMINAL_TYPES = frozenset({"Completed", "Error"})
stream_event_adapter: TypeAdapter[StreamEvent] = TypeAdapter(StreamEvent)
