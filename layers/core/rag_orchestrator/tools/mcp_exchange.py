"""What an exchange with an MCP server takes and gives, apart from the client that carries it.

Nothing here imports anything heavy: the client (tools/mcp_client.py, and httpx where no HTTP tool
loaded it) loads when the first exchange starts (`lazy_client`), not when the toolbox is built.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

LEGACY = "legacy"  # connect with the initialize handshake (servers of the 2025 protocol revisions)
AUTO = "auto"  # find out which protocol the server speaks (a listing does)


class McpCallFailed(Exception):
    """An exchange that failed: `message` for the model and the log, `client_message` for clients."""

    def __init__(self, message: str, client_message: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.client_message = client_message or message


@dataclass(frozen=True, slots=True)
class Connection:
    """Where and how one exchange goes: `mode` is AUTO, LEGACY or a protocol version."""

    url: str
    headers: Mapping[str, str]
    timeout: float
    mode: str = AUTO


@dataclass(frozen=True, slots=True)
class ListedTool:
    """A tool as the server lists it, not yet checked."""

    name: str
    description: str
    input_schema: Any


@dataclass(frozen=True, slots=True)
class Listing:
    tools: tuple[ListedTool, ...]
    mode: str  # how a call connects: the protocol version the server speaks, or LEGACY


@dataclass(frozen=True, slots=True)
class CallOutcome:
    text: str
    is_error: bool  # the tool ran and reported an error: its text is for the model


class McpExchanges(Protocol):
    """Lists and calls the tools of MCP servers (tools/mcp_client.py); McpCallFailed for any failure."""

    async def list_tools(self, connection: Connection) -> Listing: ...

    async def call_tool(
        self, connection: Connection, name: str, arguments: dict[str, Any]
    ) -> CallOutcome: ...


def lazy_client(max_response_bytes: int) -> Callable[[], Awaitable[McpExchanges]]:
    """The client, made when first asked for, its modules imported in a worker thread: the event loop
    goes on serving meanwhile."""
    made: list[McpExchanges] = []

    async def client() -> McpExchanges:
        if not made:
            module = await asyncio.to_thread(importlib.import_module, "rag_orchestrator.tools.mcp_client")
            if not made:  # another first use may have made it while this one waited
                made.append(module.McpClient(max_response_bytes=max_response_bytes))
        return made[0]

    return client
