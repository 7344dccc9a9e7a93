"""What signs the caller's identity sent to a tool's API or MCP server as `X-Caller-Assertion`
(docs/tools.md, docs/mcp.md).

The composition root (api/deps.py) hands the service's signer (tools/assertion.py) to the toolbox,
and serves its public key at GET /.well-known/jwks.json; tests may hand their own.
"""

from __future__ import annotations

from typing import Protocol

from rag_orchestrator.tools.base import ToolContext


class CallerAssertions(Protocol):
    """Signs the assertion of one tool call: `aud` the tool server's origin, `sub` the caller."""

    async def assertion(self, ctx: ToolContext, *, audience: str, tool: str) -> str: ...
