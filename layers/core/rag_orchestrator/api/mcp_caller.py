"""The caller of the POST /mcp request being served (api/mcp.py sets it), for the knowledge base's
tools (api/knowledge_mcp.py): `ask` spends as its caller, and is refused to the shared anonymous one.
A module of its own so that neither of the two imports the other."""

from __future__ import annotations

from contextvars import ContextVar

from rag_orchestrator.domain.callers import Caller

MCP_CALLER: ContextVar[Caller | None] = ContextVar("mcp_caller", default=None)
