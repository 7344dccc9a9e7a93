"""Stream events sent to clients (DESIGN.md section 6): a tagged union on `type`."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter

from rag_orchestrator.domain.base import CamelModel, utcnow


class _Event(CamelModel):
    conversation_id: str
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
    sources: list[dict[str, Any]]


class Completed(_Event):
    type: Literal["Completed"] = "Completed"
    iterations_used: int
    tokens_used: int
    message_id: str | None = None


class Error(_Event):
    type: Literal["Error"] = "Error"
    error: str
    details: str | None = None


StreamEvent = Annotated[
    StatusUpdate | ToolCallStart | ToolCallResult | ResponseChunk | Preview | Sources | Completed | Error,
    Field(discriminator="type"),
]
TERMINAL_TYPES = frozenset({"Completed", "Error"})
stream_event_adapter: TypeAdapter[StreamEvent] = TypeAdapter(StreamEvent)
