"""Tools from an MCP server (docs/mcp.md): what listing them and calling one costs.

The suite's order service (tests/fakes/fake_mcp.py: the SDK's MCPServer, stateless, answering with SSE
streams; it asks for no caller assertion, which `make dev`'s demo server verifies against the dev
server's key set) in a uvicorn process of its own on loopback; the service's MCP client in this
process, as a turn uses it:

1. Loading the client, once per process: a fresh interpreter importing tools/mcp_client.py, which is
   what a process's first listing adds (it loads only where MCP_SERVERS is set, and only then); beside
   it, what the SDK's client (`mcp.Client` and its streamable HTTP transport) took to import, the client
   this project used until 2026-11-27.
2. A listing, warm: discovering the protocol and listing the tools (McpClient.list_tools), and what a
   turn waits for once per MCP_TOOLS_TTL_SECONDS — the listing checked, embedded (hashing embedder)
   and published (McpTools.refresh with the TTL expired).
3. One call (orders__lookup_order), warm: as the registry runs it (arguments checked, headers,
   the exchange, the result), with the protocol the listing learned (one request), and, for a server of
   the 2025 revisions, with the initialize handshake; and the same two exchanges through the SDK's
   client, alternating with ours (the same requests on the wire, tests/integration/test_mcp_client.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bench.report import Section, fresh_output

MODERN = "2026-07-28"

# What the toolbox imported already (httpx, pydantic, starlette, the tool modules) is not counted.
BEFORE_IMPORT = "import time, rag_orchestrator.tools.mcp_endpoint, httpx, starlette.responses, anyio;"
IMPORTS = {
    "ours": "import rag_orchestrator.tools.mcp_client",
    "the SDK's": "import httpx2, mcp_types; from mcp import Client; import mcp.client.streamable_http",
}
CALL = {"orderId": "A-1001"}


def orders_app() -> Any:
    """The order service as an ASGI app (uvicorn's factory; lifespan on: the SDK's session manager runs)."""
    from tests.fakes.fake_mcp import orders_server

    return orders_server().streamable_http_app(stateless_http=True)


def serve(port: int) -> subprocess.Popen[bytes]:
    """The order service in a uvicorn process of its own on `port`, once it accepts connections."""
    from devserver.stack import ROOT

    argv = [sys.executable, "-m", "uvicorn", "--factory", "bench.mcp:orders_app"]
    argv += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "layers" / "core"), str(ROOT)])}
    server = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while server.poll() is None and time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return server
        time.sleep(0.1)
    server.kill()
    raise RuntimeError("the MCP server did not start")


def _import_seconds(runs: int) -> dict[str, list[float]]:
    """Fresh interpreters importing each client, alternating."""
    from devserver.stack import ROOT

    env = {**os.environ, "PYTHONPATH": str(ROOT / "layers" / "core")}
    seconds: dict[str, list[float]] = {name: [] for name in IMPORTS}
    for _ in range(runs):
        for name, statement in IMPORTS.items():
            timed = f"{BEFORE_IMPORT} t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"
            seconds[name].append(float(fresh_output(timed, env=env, what=f"{name} import")[-1]))
    return seconds


def _shared() -> Any:
    """One pool for every exchange of the SDK's client, as this project's client had it (an exchange's
    httpx2 client closes its transport; the pool outlives it)."""
    import httpx2

    from rag_orchestrator import tls

    class Shared(httpx2.AsyncBaseTransport):
        def __init__(self) -> None:
            self.pool = httpx2.AsyncHTTPTransport(verify=tls.context(), trust_env=False)

        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            return await self.pool.handle_async_request(request)

        async def aclose(self) -> None:
            pass

    return Shared()


@functools.cache
def _result_adapter() -> Any:
    import mcp_types as types
    from pydantic import TypeAdapter

    return TypeAdapter(types.CallToolResult | types.InputRequiredResult)


async def _sdk_call(url: str, headers: dict[str, str], mode: str, shared: Any) -> None:
    """One call through the SDK's client, as this project's client made it until 2026-11-27."""
    import httpx2
    import mcp_types as types
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    request = types.CallToolRequest(params=types.CallToolRequestParams(name="lookup_order", arguments=CALL))
    adapter = _result_adapter()  # built once, as the client kept it
    async with (
        httpx2.AsyncClient(transport=shared, headers=headers, timeout=10, trust_env=False) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode, cache=None) as client,
    ):
        result = await client.session.send_request(request, adapter, request_read_timeout_seconds=10)
    assert not result.is_error


async def _measure(url: str, rounds: int) -> dict[str, list[float]]:
    from rag_orchestrator.config import load_settings
    from rag_orchestrator.domain.messages import ToolCall
    from rag_orchestrator.text.hashing import HashingEmbedder
    from rag_orchestrator.tools.base import ToolContext
    from rag_orchestrator.tools.mcp_client import McpClient
    from rag_orchestrator.tools.mcp_exchange import LEGACY, Connection
    from rag_orchestrator.tools.toolbox import build_toolbox
    from tests.fakes.scripted import MemorySearchTool

    servers = json.dumps([{"name": "orders", "url": url, "identity": "none"}])
    settings = load_settings(conversation_storage="memory", mcp_servers=servers)
    toolbox = build_toolbox(settings, rag_search=MemorySearchTool([]), embedder=HashingEmbedder(), cache=None)
    assert toolbox.mcp is not None
    mcp, registry = toolbox.mcp, toolbox.registry
    endpoint = mcp.endpoints[0]
    ctx = ToolContext(conversation_id="bench", caller_id="bench", roles=("user",))
    call = ToolCall.model_validate(
        {"id": "c", "function": {"name": "orders__lookup_order", "arguments": json.dumps(CALL)}}
    )
    headers, _ = await endpoint.headers()
    client = McpClient(max_response_bytes=settings.tool_response_max_bytes)
    figures: dict[str, list[float]] = {"list": [], "refresh": [], "call": []}
    await mcp.refresh()  # the first listing: the client loads here
    shared = _shared()
    exchanges: dict[str, Callable[[], Awaitable[Any]]] = {
        "ours, current protocol (1 request)": lambda: client.call_tool(
            Connection(url, headers, 10, MODERN), "lookup_order", CALL
        ),
        "ours, 2025 protocol (initialize, initialized, call; the DELETE beside)": lambda: client.call_tool(
            Connection(url, headers, 10, LEGACY), "lookup_order", CALL
        ),
        "the SDK's, current protocol": lambda: _sdk_call(url, headers, MODERN, shared),
        "the SDK's, 2025 protocol": lambda: _sdk_call(url, headers, "legacy", shared),
    }
    for n in range(rounds + 3):
        started = time.perf_counter()
        await client.list_tools(Connection(url, headers, 10))
        listed = time.perf_counter()
        mcp.clock = lambda: float("inf")  # the TTL has passed
        await mcp.refresh()
        refreshed = time.perf_counter()
        result = await registry.execute(call, ctx)
        called = time.perf_counter()
        assert result.success, result.error
        warm = n >= 3
        if warm:
            figures["list"].append((listed - started) * 1000)
            figures["refresh"].append((refreshed - listed) * 1000)
            figures["call"].append((called - refreshed) * 1000)
        for name, exchange in exchanges.items():  # the clients alternate, round by round
            began, cpu = time.perf_counter(), time.process_time()
            await exchange()
            ended, spent = time.perf_counter(), time.process_time()
            await client.settled()  # a handshake's DELETE, sent beside the answer: not timed, not overlapping
            if warm:
                figures.setdefault(f"{name}: wall", []).append((ended - began) * 1000)
                figures.setdefault(f"{name}: CPU", []).append((spent - cpu) * 1000)
    return figures


def run(quick: bool = False) -> Section:
    from devserver.stack import free_port

    section = Section("mcp", packages=["mcp", "httpx2", "uvicorn"])
    rounds = 20 if quick else 100
    imported = _import_seconds(3 if quick else 7)
    for name, seconds in imported.items():
        section.add(f"the client's import, once per process (fresh interpreter): {name}", "s", seconds)
    port = free_port()
    server = serve(port)
    try:
        figures = asyncio.run(_measure(f"http://127.0.0.1:{port}/mcp", rounds))
    finally:
        server.terminate()
        server.wait(10)
    section.add("listing, warm: discover + tools/list (9 tools)", "ms", figures["list"])
    section.add(
        "listing as a turn pays it once per TTL: + checks, embedding, publishing", "ms", figures["refresh"]
    )
    section.add("one tool call through the registry, current protocol (1 request)", "ms", figures["call"])
    for name, samples in figures.items():  # each client's exchange: its wall time, then this process's CPU
        if name.endswith(("wall", "CPU")):
            section.add(f"one call, client {name}", "ms", samples)
    return section
