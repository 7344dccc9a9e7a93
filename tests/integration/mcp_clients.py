"""The two MCP clients side by side, for the differential tests (test_mcp_client.py on the Python SDK's
servers, test_mcp_typescript.py on the TypeScript SDK's): what the official SDK's client gets from a
listing or a call, and what ours gets, each reduced to a comparable outcome."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from typing import Any

import httpx2
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from rag_orchestrator.tools.mcp_client import McpClient
from rag_orchestrator.tools.mcp_exchange import Connection, McpCallFailed

LIMIT = 65536  # the response cap both clients' outcomes are measured against


def run[T](work: Callable[[], Any]) -> T:
    return asyncio.run(work())


async def sdk_listing(url: str) -> tuple[list[str], str]:
    async with (
        httpx2.AsyncClient(timeout=5) as http,
        Client(streamable_http_client(url, http_client=http), mode="auto", cache=None) as client,
    ):
        return [t.name for t in (await client.list_tools()).tools], client.protocol_version


async def sdk_outcome(url: str, name: str, arguments: dict[str, Any]) -> tuple[Any, ...]:
    """What the SDK's client gets: a result's texts and error flag, or the error's code."""
    async with httpx2.AsyncClient(timeout=5) as http:
        try:
            async with Client(
                streamable_http_client(url, http_client=http), mode="auto", cache=None
            ) as client:
                await client.list_tools()  # the SDK learns which arguments go in headers from a listing
                called = await client.call_tool(name, arguments)
        except Exception as exc:  # the SDK's task groups wrap what its requests raise
            while isinstance(exc, BaseExceptionGroup):
                exc = exc.exceptions[0]
            if not isinstance(exc, MCPError):
                raise
            return ("error", exc.code)
    if len(json.dumps([b.model_dump() for b in called.content])) > LIMIT:
        return ("too large",)
    return ("result", "\n".join(getattr(b, "text", "") for b in called.content), bool(called.is_error))


async def our_outcome(url: str, name: str, arguments: dict[str, Any]) -> tuple[Any, ...]:
    client = McpClient(max_response_bytes=LIMIT)
    listing = await client.list_tools(Connection(url, {}, 5.0))
    try:
        called = await client.call_tool(Connection(url, {}, 5.0, listing.mode), name, arguments)
    except McpCallFailed as failed:
        if "larger than" in failed.message:
            return ("too large",)
        code = re.search(r"error \((-?\d+)\)", failed.message)
        assert code, failed.message
        return ("error", int(code.group(1)))
    return ("result", called.text, called.is_error)
