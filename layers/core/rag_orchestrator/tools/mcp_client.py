"""MCP over streamable HTTP: list a server's tools, call one (docs/mcp.md), without the `mcp` SDK.

The SDK's client took ~1.1 s of CPU to import (its package imports its servers too), paid by the first
turn of a cold instance that uses an MCP server; this client is the wire of `mcp_session.py` on httpx,
which HTTP tools load anyway. Each exchange is a session of its own (the headers carry the caller's
identity, which changes with every call); a listing learns the protocol the server speaks, so a call to
a server of the current protocol is one request. Every answer is read up to a byte limit; any failure is
an McpCallFailed whose message the model may read, and whose `client_message` never quotes the server.
"""

from __future__ import annotations

import asyncio
import json
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from rag_orchestrator import __version__, tls
from rag_orchestrator.observability import logger
from rag_orchestrator.tools.mcp_exchange import CallOutcome, Connection, ListedTool, Listing, McpCallFailed
from rag_orchestrator.tools.mcp_headers import header_map, param_headers
from rag_orchestrator.tools.mcp_session import (
    HEADER_MISMATCH,
    PARSE_ERROR,
    REQUEST_TIMEOUT,
    McpSession,
    RpcError,
    TooLarge,
)

MAX_LIST_PAGES = 20
LIST_MAX_BYTES = 2 * 1024 * 1024  # a tools/list page: descriptions and schemas of many tools
_ERROR_EXCERPT = 500
_CLIENT_INFO = {"name": "rag-orchestrator", "version": __version__}
_INPUT_REQUIRED = "input_required"


class McpClient:
    """Lists and calls the tools of MCP servers; one connection pool per event loop, like HTTP tools'."""

    def __init__(self, *, max_response_bytes: int) -> None:
        self.max_response_bytes = max_response_bytes
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
            weakref.WeakKeyDictionary()
        )
        self._closing: set[asyncio.Task[None]] = set()  # sessions being deleted

    def _http(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            limits = httpx.Limits(max_connections=64, max_keepalive_connections=16)
            client = self._clients[loop] = httpx.AsyncClient(
                verify=tls.context(), trust_env=False, limits=limits
            )
        return client

    async def list_tools(self, connection: Connection) -> Listing:
        """Every tool the server lists, page by page; McpCallFailed when it cannot be listed."""

        async def listing(session: McpSession) -> Listing:
            listed = await _listed(session)
            tools = tuple(
                ListedTool(
                    str(t["name"]), str(t.get("description") or t.get("title") or ""), t.get("inputSchema")
                )
                for t in listed
            )
            return Listing(tools, session.mode)

        return await self._exchange(connection, LIST_MAX_BYTES, listing)

    async def call_tool(self, connection: Connection, name: str, arguments: dict[str, Any]) -> CallOutcome:
        """Call `name` with `arguments`; McpCallFailed for anything but a result."""

        async def call(session: McpSession) -> dict[str, Any]:
            return await _call(session, name, arguments)

        result = await self._exchange(connection, self.max_response_bytes, call)
        if result.get("resultType") == _INPUT_REQUIRED:
            raise McpCallFailed(
                "The MCP server asked for input (elicitation or sampling), which this assistant cannot give"
            )
        return CallOutcome(_text(result), bool(result.get("isError")))

    async def _exchange[T](
        self, connection: Connection, limit: int, work: Callable[[McpSession], Awaitable[T]]
    ) -> T:
        session = McpSession(self._http(), connection, limit, _CLIENT_INFO)
        try:
            async with asyncio.timeout(connection.timeout):
                await session.open(connection.mode)
                return await work(session)
        except Exception as exc:
            raise _failure(exc, session, connection.timeout, limit) from None
        finally:
            self._close(session)

    async def settled(self) -> None:
        """Once the sessions being deleted are (a process's shutdown; tests that read a server's log)."""
        await asyncio.gather(*self._closing, return_exceptions=True)

    def _close(self, session: McpSession) -> None:
        """A handshake's session is deleted beside what comes next: the answer does not wait for it
        (a session of the current protocol has none to delete)."""
        if session.session_id is None:
            return
        closing = asyncio.get_running_loop().create_task(session.close())
        self._closing.add(closing)
        closing.add_done_callback(self._closing.discard)


async def _listed(session: McpSession) -> list[dict[str, Any]]:
    """The tools of every page, each an object with a string name; on the modern protocol, a tool whose
    header annotations are not valid ones is left out (the SDK's client drops it too)."""
    tools: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(MAX_LIST_PAGES):
        page = await session.request("tools/list", {"cursor": cursor} if cursor else None)
        listed = page.get("tools")
        if not isinstance(listed, list):
            raise RpcError(PARSE_ERROR, "A listing without its tools")
        tools += [t for t in listed if isinstance(t, dict) and isinstance(t.get("name"), str)]
        cursor = page.get("nextCursor") if isinstance(page.get("nextCursor"), str) else None
        if not cursor:
            break
    if session.version is None:
        return tools
    kept = []
    for tool in tools:
        if header_map(tool.get("inputSchema")) is not None:
            kept.append(tool)
            continue
        reason = "its x-mcp-header annotations are not valid ones"
        logger.warning("mcp tool skipped", extra={"tool": tool["name"][:100], "reason": reason})
    return kept


async def _call(session: McpSession, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One request; a server that wants arguments mirrored into headers (HEADER_MISMATCH) gets the tool
    listed on this session, and the call again with them."""
    params = {"name": name, "arguments": arguments}
    try:
        return await session.request("tools/call", params)
    except RpcError as exc:
        if exc.code != HEADER_MISMATCH or session.version is None:
            raise
    schema = next((t.get("inputSchema") for t in await _listed(session) if t["name"] == name), None)
    headers = param_headers(header_map(schema) or {}, arguments)
    return await session.request("tools/call", params, headers)


def _text(result: dict[str, Any]) -> str:
    """What the model reads: the text of each content block, or the structured content as JSON."""
    parts: list[str] = []
    content = result.get("content")
    for block in content if isinstance(content, list) else []:
        kind = block.get("type") if isinstance(block, dict) else None
        resource = block.get("resource") if isinstance(block, dict) else None
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif kind == "resource" and isinstance(resource, dict) and isinstance(resource.get("text"), str):
            parts.append(resource["text"])
        elif kind == "resource_link" and isinstance(block, dict):
            parts.append(f"[{block.get('name', '')}]({block.get('uri', '')})")
        else:
            parts.append(f"[{kind} content omitted]")
    structured = result.get("structuredContent")
    if not any(parts) and structured is not None:
        return json.dumps(structured, ensure_ascii=False, separators=(",", ":"))
    return "\n".join(parts)


def _failure(exc: Exception, session: McpSession, timeout: float, limit: int) -> McpCallFailed:
    """A failed exchange in words: a timeout, an answer too large, the server's error, or no answer."""
    if isinstance(exc, TooLarge) or session.exceeded:
        return McpCallFailed(f"The MCP server's answer was larger than {limit} bytes")
    timed_out = isinstance(exc, TimeoutError | httpx.TimeoutException)
    if timed_out or (isinstance(exc, RpcError) and exc.code == REQUEST_TIMEOUT):
        return McpCallFailed(f"The MCP server did not answer within {timeout:g}s")
    if isinstance(exc, RpcError):
        said = " ".join(exc.message.split())[:_ERROR_EXCERPT]
        return McpCallFailed(
            f"The MCP server answered with an error ({exc.code}): {said}",
            f"The MCP server answered with an error ({exc.code})",
        )
    if isinstance(exc, httpx.HTTPError | OSError):
        return McpCallFailed(f"Could not reach the MCP server ({type(exc).__name__})")
    return McpCallFailed(f"The MCP server's answer could not be read ({type(exc).__name__})")
