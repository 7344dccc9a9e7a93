"""The seam for the caller's identity sent to a tool's server as `X-Caller-Assertion` (docs/mcp.md).

The composition root (api/deps.py) hands the signer to the toolbox; a tool whose server wants an
assertion fails its calls with a clear tool error while none is wired.
"""

from __future__ import annotations

from typing import Protocol

from rag_orchestrator.tools.base import ToolContext


class CallerAssertions(Protocol):
    """Signs the assertion of one tool call: `aud` the tool server's origin, `sub` the caller."""

    async def assertion(self, ctx: ToolContext, *, audience: str, tool: str) -> str: ...
