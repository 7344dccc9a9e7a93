"""The in-memory message format every provider translates to and from at its edge."""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, Field

from rag_orchestrator.domain.base import CamelModel
from rag_orchestrator.domain.passages import Passage
from rag_orchestrator.domain.text import check_strings


class Role(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"
    SYSTEM = "system"


class FunctionCall(BaseModel):
    name: str
    arguments: str = "{}"  # JSON text, as the model produced it


class ToolCall(BaseModel):
    id: str
    type: Literal["function"] = "function"
    function: FunctionCall

    def parsed_arguments(self) -> dict[str, Any]:
        """Arguments as an object; ValueError when they are not a JSON object, InvalidText when a
        string in them breaks the client-text rule (the model's arguments are checked like input)."""
        value = json.loads(self.function.arguments or "{}")
        if not isinstance(value, dict):
            raise ValueError("tool arguments must be a JSON object")
        return check_strings(value)


class Message(BaseModel):
    """One message of the model's context. `reasoning` is kept for replay, never shown to clients."""

    role: Role
    content: str = ""
    tool_call_id: str | None = None
    tool_name: str | None = None
    tool_calls: list[ToolCall] | None = None
    reasoning: str | None = None


class ToolPreview(BaseModel):
    """A result shown to the user instead of the model: a tool's preview (the `Preview` event, docs/streams.md)."""

    type: str
    payload: Any


class ToolResult(CamelModel):
    tool_call_id: str
    tool_name: str
    result: str
    success: bool = True
    error: str | None = None
    passages: list[Passage] = Field(default_factory=list)  # what a knowledge search found
    preview: ToolPreview | None = None
    client_error: str | None = None  # what a client is shown instead of `error`, which may quote an upstream

    def for_model(self) -> str:
        """What the model reads back as the tool message's content."""
        if self.success:
            return self.result
        return json.dumps({"error": self.error or "tool failed", "success": False})

    def for_client(self) -> str:
        """What the ToolCallResult event shows: the model's view, minus any upstream body."""
        if self.success or self.client_error is None:
            return self.for_model()
        return json.dumps({"error": self.client_error, "success": False})
