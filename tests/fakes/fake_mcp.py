"""MCP servers on loopback for the suite and the benchmarks, built with the official SDK.

`FakeMcp(app)` serves an ASGI app with uvicorn in a thread (lifespan on, so the SDK's session
manager runs) and logs each request it receives — the JSON-RPC method, the tool and arguments of a
tools/call, and the identity headers — as a tool server's access log would:

    with FakeMcp(orders_server().streamable_http_app(stateless_http=True)) as server:
        ...
        assert server.calls("lookup_order")[0]["headers"]["x-caller-assertion"]

`/hang` answers a stream that never ends; `/garbage` answers JSON that is not JSON-RPC; a call of
`live_tracking` is answered with the start of an event, and then nothing. With `legacy=True` the
server knows only the 2025 protocol: it refuses `server/discover` as a server of that time does.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Annotated, Any

import uvicorn
from mcp.server import Server
from mcp.server.mcpserver import Context, MCPServer, Resolve, Sample
from mcp_types import CallToolResult, CreateMessageResult, ListToolsResult, SamplingMessage, TextContent, Tool
from pydantic import BaseModel, Field

from devserver.stack import free_port

LOGGED_HEADERS = (
    "x-caller-assertion",
    "authorization",
    "x-api-key",
    "x-tenant",
    "user-agent",
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
    "mcp-param-region",
)
ORDERS = {"A-1001": "shipped", "A-1002": "processing"}
HUGE_BYTES = 5 * 1024 * 1024


class FakeMcp:
    def __init__(self, app: Any, *, path: str = "/mcp", legacy: bool = False) -> None:
        self.app = app
        self.path = path
        self.legacy = legacy
        self.port = free_port()
        self.log: list[dict[str, Any]] = []
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.base}{self.path}"

    def calls(self, tool: str | None = None) -> list[dict[str, Any]]:
        """The tools/call requests received (of `tool`), in order."""
        return [e for e in self.log if e["method"] == "tools/call" and tool in (None, e["tool"])]

    async def _asgi(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["path"] == "/hang":
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")],
                }
            )
            await send({"type": "http.response.body", "body": b": started\n\n", "more_body": True})
            await asyncio.sleep(3600)
            return
        if scope["path"] == "/garbage":
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-type", b"application/json")],
                }
            )
            await send(
                {"type": "http.response.body", "body": b'{"jsonrpc": "2.0", "id": 1, "result": {"tools": [}'}
            )
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        tool = self._record(scope, body)
        if self.legacy and self.log[-1]["method"] == "server/discover":
            refusal = {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": -32600, "message": "Bad Request: Missing session ID"},
            }
            await send(
                {
                    "type": "http.response.start",
                    "status": 400,
                    "headers": [(b"content-type", b"application/json")],
                }
            )
            await send({"type": "http.response.body", "body": json.dumps(refusal).encode()})
            return
        if tool == "live_tracking":
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")],
                }
            )
            await send(
                {
                    "type": "http.response.body",
                    "body": b'event: message\ndata: {"jsonrpc": "2.0", ',
                    "more_body": True,
                }
            )
            await asyncio.sleep(3600)
            return
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    def _record(self, scope: dict[str, Any], body: bytes) -> str | None:
        """Log the request; the tool it calls, if any."""
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        try:
            message = json.loads(body) if body else {}
        except ValueError:
            message = {}
        params = message.get("params") or {} if isinstance(message, dict) else {}
        self.log.append(
            {
                "verb": scope["method"],
                "method": message.get("method") if isinstance(message, dict) else None,
                "tool": params.get("name"),
                "arguments": params.get("arguments"),
                "headers": {name: headers[name] for name in LOGGED_HEADERS if name in headers},
            }
        )
        return self.log[-1]["tool"]

    def start(self) -> FakeMcp:
        config = uvicorn.Config(
            self._asgi,
            host="127.0.0.1",
            port=self.port,
            log_level="warning",
            lifespan="on",
            interface="asgi3",
            timeout_graceful_shutdown=0.5,  # the streams that hang on purpose never end by themselves
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="fake-mcp", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the fake MCP server did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(10)
        self._server = self._thread = None

    def __enter__(self) -> FakeMcp:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class Confirmation(BaseModel):
    confirmed: bool


def write_summary() -> Sample:
    """A resolver asking the client's model for text: the client must have declared sampling."""
    message = SamplingMessage(role="user", content=TextContent(type="text", text="Summarize the reviews"))
    return Sample([message], max_tokens=50)


def orders_server() -> MCPServer:
    """An order service: lookups, a cancel (approval), and tools that are slow, huge, failing or asking."""
    server = MCPServer("orders", log_level="WARNING")

    @server.tool()
    def lookup_order(orderId: str) -> str:
        """Look up the shipping status of one customer order by its order number"""
        return f"Order {orderId} is {ORDERS.get(orderId, 'unknown')}"

    @server.tool()
    def cancel_order(orderId: str) -> str:
        """Cancel a customer order that has not shipped yet"""
        return f"Order {orderId} is cancelled"

    @server.tool()
    async def slow_report(seconds: float) -> str:
        """Build the quarterly warehouse report (takes a while)"""
        await asyncio.sleep(seconds)
        return "report"

    @server.tool()
    def live_tracking(orderId: str) -> str:
        """Follow the courier of an order live (its answer stalls mid-stream: FakeMcp)"""
        return "never reached"

    @server.tool()
    def regional_stock(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})]) -> str:
        """How many items are in stock in one region (the region goes in a header too, as Mcp-Param-Region)"""
        return f"12 in stock in {region}"

    @server.tool()
    def huge_export() -> str:
        """Export every order ever placed as one document"""
        return "x" * HUGE_BYTES

    @server.tool()
    def broken_lookup() -> str:
        """A lookup whose backend is failing"""
        raise ValueError("the orders database is down")

    @server.tool()
    async def confirm_address(ctx: Context) -> str:
        """Ask the user to confirm their delivery address"""
        answer = await ctx.elicit("Is the delivery address right?", Confirmation)
        return str(answer)

    @server.tool()
    def summarize_reviews(summary: Annotated[CreateMessageResult, Resolve(write_summary)]) -> str:
        """Summarize the customer reviews of a product (asks the client's model to write it)"""
        return str(summary)

    return server


def odd_server(tools: list[Tool]) -> Server:
    """A low-level server that lists exactly `tools` (duplicates, bad names and schemas included)."""

    async def list_tools(ctx: Any, params: Any) -> ListToolsResult:
        return ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: Any) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=f"called {params.name}")])

    return Server("odd", on_list_tools=list_tools, on_call_tool=call_tool)
