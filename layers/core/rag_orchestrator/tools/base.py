"""A tool is data: a name, a description, a JSON schema and an async execute."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.domain.messages import ToolResult
from rag_orchestrator.domain.passages import Passage
from rag_orchestrator.providers.short_calls import ShortCall
from rag_orchestrator.retrieval.followup import Said
from rag_orchestrator.retrieval.query_vector import QueryVector


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a tool may know about the turn it runs in: `claims` and `caller_token` are the caller's
    (domain/callers.py), `context` the request's, which the client chose."""

    conversation_id: str
    caller_id: str
    roles: tuple[str, ...] = ()
    context_type: str | None = None
    context: dict[str, Any] = field(default_factory=dict)
    claims: Mapping[str, Any] = field(default_factory=dict, repr=False)
    memory: bool = True  # false in a temporary chat: no conversation memory is searched
    caller_token: str | None = field(default=None, repr=False)  # the caller's bearer token (AUTH_MODE=jwt)
    deadline: float | None = None  # epoch seconds by which the turn must end

    @property
    def caller(self) -> Caller:
        return Caller(self.caller_id, self.roles, self.claims, self.caller_token)


@runtime_checkable
class Tool(Protocol):
    name: str
    description: str
    parameters: dict[str, Any]

    async def execute(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult: ...


class SearchTool(Tool, Protocol):
    """A knowledge search that is also a tool: `rag_search`, which the loop also calls before the model."""

    async def search(
        self,
        query: str,
        *,
        caller_id: str | None = None,
        conversation_id: str | None = None,
        vector: QueryVector | None = None,
        history: Sequence[Said] = (),
        calls: list[ShortCall] | None = None,
    ) -> list[Passage]: ...


class AttachmentLinks(Protocol):
    """Presigned GETs of a conversation's attachments for HTTP tools (attachments/turns.py)."""

    async def link(self, caller_id: str, conversation_id: str, attachment_id: str) -> str:
        """The URL; AttachmentNotFound unless the caller owns it in this conversation."""
        ...


def definition(tool: Tool) -> dict[str, Any]:
    """The OpenAI-style function definition a provider sends to the model."""
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
    }


def failure(
    tool_name: str, message: str, tool_call_id: str = "", *, client_message: str | None = None
) -> ToolResult:
    """An unsuccessful result; `client_message` replaces `message` for clients when it quotes an upstream."""
    return ToolResult(
        tool_call_id=tool_call_id,
        tool_name=tool_name,
        result="",
        success=False,
        error=message,
        client_error=client_message,
    )
