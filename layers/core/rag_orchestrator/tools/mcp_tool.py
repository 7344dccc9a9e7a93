"""McpTool: one tool of an MCP server, offered to the model as `<server>__<tool>` (docs/mcp.md).

It is a Tool like an HTTP tool: the registry validates its arguments against the schema the server
listed, bounds its time and size, and audits it; `approval_required` holds it for the caller's
decision. A call has the server's timeoutSeconds, cut to what is left of the turn. Whatever goes
wrong — the server down, a timeout, an answer too large or unreadable, a tool that reports an
error — is an unsuccessful result: the model reads why, a client never reads the server's words.
"""

from __future__ import annotations

import time
from typing import Any

from rag_orchestrator.domain.messages import ToolResult
from rag_orchestrator.observability import logger
from rag_orchestrator.sanitize import strip_control, truncate
from rag_orchestrator.tools.base import ToolContext, failure
from rag_orchestrator.tools.mcp_endpoint import McpEndpoint
from rag_orchestrator.tools.mcp_exchange import ListedTool, McpCallFailed

MAX_DESCRIPTION = 2000
_ERROR_EXCERPT = 500
TOOL_ERROR = "The MCP tool reported an error"


class McpTool:
    def __init__(self, endpoint: McpEndpoint, listed: ListedTool) -> None:
        server = endpoint.server
        self.endpoint = endpoint
        self.remote_name = listed.name
        self.name = server.tool_name(listed.name)
        described = (
            " ".join(listed.description.split()) or f"The {listed.name} tool of the {server.name} service"
        )
        self.description = truncate(described, MAX_DESCRIPTION)
        self.parameters: dict[str, Any] = listed.input_schema
        self.approval_required = server.needs_approval(listed.name)
        self.timeout_seconds = endpoint.timeout_seconds

    def embed_text(self) -> str:
        """What tool selection ranks it by, like a catalogue tool's `{name} — {description}`."""
        return f"{self.name} — {self.description}"

    async def execute(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        timeout = self.timeout_seconds
        if ctx.deadline is not None:
            timeout = min(timeout, ctx.deadline - time.time())
        if timeout <= 0:
            return failure(self.name, "The turn has no time left for this tool")
        started = time.perf_counter()
        try:
            outcome = await self.endpoint.call_tool(self.remote_name, arguments, ctx, self.name, timeout)
        except McpCallFailed as exc:
            logger.warning("mcp tool failed", extra={"tool": self.name, "reason": exc.client_message})
            return failure(self.name, exc.message, client_message=exc.client_message)
        logger.info(
            "mcp tool called",
            extra={
                "tool": self.name,
                "is_error": outcome.is_error,
                "ms": round((time.perf_counter() - started) * 1000, 1),
            },
        )
        if outcome.is_error:
            said = truncate(" ".join(strip_control(outcome.text).split()), _ERROR_EXCERPT)
            return failure(
                self.name, f"{TOOL_ERROR}: {said}" if said else TOOL_ERROR, client_message=TOOL_ERROR
            )
        return ToolResult(tool_call_id="", tool_name=self.name, result=outcome.text)
