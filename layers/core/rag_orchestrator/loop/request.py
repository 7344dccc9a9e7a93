"""What the loop takes in: one turn's request, as the routes build it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.providers.events import StreamingMode
from rag_orchestrator.tools.base import ToolContext


@dataclass(frozen=True)
class TurnRequest:
    conversation_id: str
    caller: Caller
    message: str
    client_message_id: str | None = None
    context_type: str | None = None
    context: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)
    mode: StreamingMode = StreamingMode.PROGRESSIVE
    request_id: str | None = None  # the HTTP request's, for the audit record
    client_request_id: str | None = None  # the client's X-Request-Id, kept beside it in the audit record
    attachment_ids: tuple[str, ...] = ()  # attachments of this conversation the message comes with
    deadline: float | None = None  # epoch seconds by which the turn must end; None: the default budget
    memory: bool = True  # false in a temporary chat, known once the window is read

    def tool_context(self, deadline: float | None = None) -> ToolContext:
        """What the turn's tools may know of it; `deadline`: the turn's, in epoch seconds."""
        return ToolContext(
            conversation_id=self.conversation_id,
            caller_id=self.caller.caller_id,
            roles=self.caller.roles,
            context_type=self.context_type,
            context=self.context,
            claims=self.caller.claims,
            memory=self.memory,
            caller_token=self.caller.token,
            deadline=deadline,
        )
