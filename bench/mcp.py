"""Tools from an MCP server (docs/mcp.md): what listing them and calling one costs.

The suite's order service (tests/fakes/fake_mcp.py: the SDK's MCPServer, stateless, answering with SSE
streams; it asks for no caller assertion, which `make dev`'s demo server verifies against the dev
server's key set) in a uvicorn process of its own on loopback; the service's MCP client in this
process, as a turn uses it:

1. Loading the SDK, once per process: a fresh interpreter importing tools/mcp_client.py, which is what
   a process's first listing adds (the SDK loads only where MCP_SERVERS is set, and only then).
2. A listing, warm: discovering the protocol and listing the tools (McpClient.list_tools), and what a
   turn waits for once per MCP_TOOLS_TTL_SECONDS — the listing checked, embedded (hashing embedder)
   and published (McpTools.refresh with the TTL expired).
3. One call (orders__lookup_order), warm: as the registry runs it (arguments checked, headers,
   the exchange, the result), with the protocol the listing learned (one request), and, for a server of
   the 2025 revisions, with the initialize handshake.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from typing import Any

from bench.report import Section

# What the toolbox imported already (httpx, pydantic, starlette, the tool modules) is not counted.
IMPORT = (
    "import time, rag_orchestrator.tools.mcp_endpoint, httpx, starlette.responses, anyio;"
    "t = time.perf_counter(); import rag_orchestrator.tools.mcp_client; print(time.perf_counter() - t)"
)
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


def _import_seconds(runs: int) -> list[float]:
    from devserver.stack import ROOT

    env = {**os.environ, "PYTHONPATH": str(ROOT / "layers" / "core")}
    return [
        float(
            subprocess.run(
                [sys.executable, "-c", IMPORT], env=env, capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(runs)
    ]


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
    figures: dict[str, list[float]] = {"list": [], "refresh": [], "call": [], "call_legacy": []}
    await mcp.refresh()  # the first listing: the SDK loads here
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
        await client.call_tool(Connection(url, headers, 10, LEGACY), "lookup_order", CALL)
        legacy = time.perf_counter()
        if n >= 3:  # warm-up
            figures["list"].append((listed - started) * 1000)
            figures["refresh"].append((refreshed - listed) * 1000)
            figures["call"].append((called - refreshed) * 1000)
            figures["call_legacy"].append((legacy - called) * 1000)
    return figures


def run(quick: bool = False) -> Section:
    from devserver.stack import free_port

    section = Section("mcp", packages=["mcp", "httpx2", "uvicorn"])
    rounds = 20 if quick else 100
    section.add("SDK import, once per process (fresh interpreter)", "s", _import_seconds(3 if quick else 7))
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
    section.add("one tool call, 2025 protocol (initialize, initialized, call)", "ms", figures["call_legacy"])
    return section
