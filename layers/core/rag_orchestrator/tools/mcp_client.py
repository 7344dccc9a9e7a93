"""MCP over streamable HTTP with the official `mcp` SDK: list a server's tools, call one (docs/mcp.md).

Imported only when MCP_SERVERS names a server: the SDK takes a second or more to import. Each
exchange is a connection of its own (the headers carry the caller's identity, which changes with
every call); a listing learns the protocol the server speaks, so a call to a server of the current
protocol is one request. Every answer is read up to a byte limit; any failure is an McpCallFailed
whose message the model may read, and whose `client_message` never quotes the server.
"""

from __future__ import annotations

import asyncio
import json
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import mcp_types as types
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import TypeAdapter

from rag_orchestrator import __version__, tls
from rag_orchestrator.tools.mcp_exchange import (
    LEGACY,
    CallOutcome,
    Connection,
    ListedTool,
    Listing,
    McpCallFailed,
)

MAX_LIST_PAGES = 20
LIST_MAX_BYTES = 2 * 1024 * 1024  # a tools/list page: descriptions and schemas of many tools
_ERROR_EXCERPT = 500
_CLIENT_INFO = types.Implementation(name="rag-orchestrator", version=__version__)
_CALL_RESULT: TypeAdapter[types.CallToolResult | types.InputRequiredResult] = TypeAdapter(
    types.CallToolResult | types.InputRequiredResult
)


class ResponseTooLarge(httpx2.ReadError):
    pass


class _CappedStream(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, owner: CappedTransport) -> None:
        self._inner = inner
        self._owner = owner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            self._owner.received += len(chunk)
            if self._owner.received > self._owner.limit:
                self._owner.exceeded = True
                raise ResponseTooLarge("response too large")
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class CappedTransport(httpx2.AsyncBaseTransport):
    """One exchange's view of the shared connection pool: at most `limit` bytes of answers in all."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, limit: int) -> None:
        self._inner = inner
        self.limit = limit
        self.received = 0
        self.exceeded = False

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and self.received + int(declared) > self.limit:
            await response.aclose()
            self.exceeded = True
            raise ResponseTooLarge("response too large")
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        return httpx2.Response(
            response.status_code,
            headers=response.headers,
            stream=_CappedStream(response.stream, self),
            extensions=response.extensions,
            request=request,
        )

    async def aclose(self) -> None:
        """The pool outlives the exchange."""


class McpClient:
    """Lists and calls the tools of MCP servers; one connection pool per event loop, like HTTP tools'."""

    def __init__(
        self, *, max_response_bytes: int, transport: httpx2.AsyncBaseTransport | None = None
    ) -> None:
        self.max_response_bytes = max_response_bytes
        self._transport = transport
        self._pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx2.AsyncBaseTransport] = (
            weakref.WeakKeyDictionary()
        )

    def _pool(self) -> httpx2.AsyncBaseTransport:
        if self._transport is not None:
            return self._transport
        loop = asyncio.get_running_loop()
        pool = self._pools.get(loop)
        if pool is None:
            limits = httpx2.Limits(max_connections=64, max_keepalive_connections=16)
            pool = self._pools[loop] = httpx2.AsyncHTTPTransport(
                verify=tls.context(), trust_env=False, limits=limits
            )
        return pool

    @asynccontextmanager
    async def _connect(
        self, connection: Connection, limit: int
    ) -> AsyncIterator[tuple[Client, CappedTransport]]:
        capped = CappedTransport(self._pool(), limit)
        http = httpx2.AsyncClient(
            transport=capped,
            headers=dict(connection.headers),
            timeout=httpx2.Timeout(connection.timeout),
            trust_env=False,
        )
        client = Client(
            streamable_http_client(connection.url, http_client=http),
            mode=connection.mode,
            cache=None,
            read_timeout_seconds=connection.timeout,
            client_info=_CLIENT_INFO,
        )
        try:
            async with client:
                yield client, capped
        finally:
            await http.aclose()

    async def list_tools(self, connection: Connection) -> Listing:
        """Every tool the server lists, page by page; McpCallFailed when it cannot be listed."""
        capped: CappedTransport | None = None
        timeout = connection.timeout
        try:
            async with asyncio.timeout(timeout):
                async with self._connect(connection, LIST_MAX_BYTES) as (client, capped):
                    tools: list[types.Tool] = []
                    cursor: str | None = None
                    for _ in range(MAX_LIST_PAGES):
                        page = await client.list_tools(cursor=cursor)
                        tools += page.tools
                        cursor = page.next_cursor
                        if not cursor:
                            break
                    version = client.protocol_version
        except Exception as exc:
            raise _failure(exc, capped, timeout, LIST_MAX_BYTES) from None
        mode = version if version in MODERN_PROTOCOL_VERSIONS else LEGACY
        listed = tuple(ListedTool(t.name, t.description or t.title or "", t.input_schema) for t in tools)
        return Listing(listed, mode)

    async def call_tool(self, connection: Connection, name: str, arguments: dict[str, Any]) -> CallOutcome:
        """Call `name` with `arguments`; McpCallFailed for anything but a result."""
        capped: CappedTransport | None = None
        limit, timeout = self.max_response_bytes, connection.timeout
        try:
            async with asyncio.timeout(timeout):
                async with self._connect(connection, limit) as (client, capped):
                    result = await _call(client, name, arguments, timeout)
        except Exception as exc:
            raise _failure(exc, capped, timeout, limit) from None
        if isinstance(result, types.InputRequiredResult):
            raise McpCallFailed(
                "The MCP server asked for input (elicitation or sampling), which this assistant cannot give"
            )
        return CallOutcome(_text(result), bool(result.is_error))


async def _call(
    client: Client, name: str, arguments: dict[str, Any], seconds: float
) -> types.CallToolResult | types.InputRequiredResult:
    """One request; a server that wants the tool listed on this connection first (arguments it
    mirrors into headers) gets the SDK's own list-and-call."""
    request = types.CallToolRequest(params=types.CallToolRequestParams(name=name, arguments=arguments))
    try:
        return await client.session.send_request(request, _CALL_RESULT, request_read_timeout_seconds=seconds)
    except MCPError as exc:
        if exc.code != types.HEADER_MISMATCH:
            raise
    await client.list_tools()
    return await client.call_tool(name, arguments, read_timeout_seconds=seconds)


def _text(result: types.CallToolResult) -> str:
    """What the model reads: the text of each content block, or the structured content as JSON."""
    parts: list[str] = []
    for block in result.content:
        match block:
            case types.TextContent(text=text):
                parts.append(text)
            case types.EmbeddedResource(resource=types.TextResourceContents(text=text)):
                parts.append(text)
            case types.ResourceLink(uri=uri, name=link_name):
                parts.append(f"[{link_name}]({uri})")
            case _:
                parts.append(f"[{block.type} content omitted]")
    if not any(parts) and result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":"))
    return "\n".join(parts)


def _leaf(exc: BaseException) -> BaseException:
    """The first exception inside task-group exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _failure(exc: Exception, capped: CappedTransport | None, timeout: float, limit: int) -> McpCallFailed:
    """A failed exchange in words: a timeout, an answer too large, the server's error, or no answer."""
    leaf = _leaf(exc)
    if capped is not None and capped.exceeded:
        return McpCallFailed(f"The MCP server's answer was larger than {limit} bytes")
    timed_out = isinstance(leaf, TimeoutError | httpx2.TimeoutException)
    if timed_out or (isinstance(leaf, MCPError) and leaf.code == types.REQUEST_TIMEOUT):
        return McpCallFailed(f"The MCP server did not answer within {timeout:g}s")
    if isinstance(leaf, MCPError):
        said = " ".join(leaf.message.split())[:_ERROR_EXCERPT]
        return McpCallFailed(
            f"The MCP server answered with an error ({leaf.code}): {said}",
            f"The MCP server answered with an error ({leaf.code})",
        )
    if isinstance(leaf, httpx2.HTTPError | OSError):
        return McpCallFailed(f"Could not reach the MCP server ({type(leaf).__name__})")
    return McpCallFailed(f"The MCP server's answer could not be read ({type(leaf).__name__})")
