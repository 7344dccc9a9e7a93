"""What the loop takes in — a turn request — and what it needs from the rest of the system, as Protocols.

The composition root (api/deps.py) wires the real parts; tests and benchmarks wire scripted ones.
The store's part is `conversations.store.TurnStore`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from rag_orchestrator.domain.attachments import Attachment
from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.domain.messages import ToolCall, ToolResult
from rag_orchestrator.domain.passages import Passage
from rag_orchestrator.providers.events import StreamingMode
from rag_orchestrator.retrieval.followup import Said
from rag_orchestrator.retrieval.query_vector import QueryVector
from rag_orchestrator.tools.base import Tool, ToolContext

if TYPE_CHECKING:  # the record names the request it belongs to
    from rag_orchestrator.loop.record import TurnRecord


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
    attachment_ids: tuple[str, ...] = ()  # attachments of this conversation the message comes with
    deadline: float | None = None  # epoch seconds by which the turn must end; None: the default budget

    def tool_context(self, deadline: float | None = None) -> ToolContext:
        """What the turn's tools may know of it; `deadline`: the turn's, in epoch seconds."""
        return ToolContext(
            conversation_id=self.conversation_id,
            caller_id=self.caller.caller_id,
            roles=self.caller.roles,
            context_type=self.context_type,
            context=self.context,
            caller_token=self.caller.token,
            deadline=deadline,
        )


@dataclass(frozen=True)
class Toolset:
    """The tools offered for one turn, with the system prompt that goes with them."""

    names: list[str]
    definitions: list[dict[str, Any]]
    system_prompt: str


class Tools(Protocol):
    """The tool registry (tools/registry.py): definitions for the model, execution that never raises."""

    def get(self, name: str) -> Tool | None: ...

    def definitions(self, names: Iterable[str] | None = None) -> list[dict[str, Any]]: ...

    async def execute_all(
        self, calls: Sequence[ToolCall], ctx: ToolContext, allowed: Iterable[str] | None = None
    ) -> list[ToolResult]: ...


class KnowledgeSearch(Protocol):
    """The initial knowledge search before the first model call (LOOP_INITIAL_RAG), as rag_search for the caller."""

    async def search(
        self,
        query: str,
        *,
        caller_id: str | None = None,
        vector: QueryVector | None = None,
        history: Sequence[Said] = (),  # the conversation before the message (a follow-up's meaning)
    ) -> list[Passage]: ...


class AfterTurn(Protocol):
    """Work once a turn's terminal event is out (conversation memory, titles): off the client's path."""

    async def __call__(self, request: TurnRequest, record: TurnRecord) -> None: ...


class ToolChooser(Protocol):
    """Picks the tools and the system prompt for a turn (loop/toolsets.py)."""

    async def __call__(self, request: TurnRequest, vector: QueryVector | None = None) -> Toolset: ...


class AttachmentSource(Protocol):
    """The attachments a turn names (attachments/turns.py): checked before anything is written, read in the turn."""

    async def check(
        self, caller_id: str, conversation_id: str, attachment_ids: Sequence[str]
    ) -> list[Attachment]: ...

    async def read(self, attachment: Attachment) -> Attachment: ...
