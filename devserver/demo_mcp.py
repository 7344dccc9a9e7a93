"""The demo MCP server `make dev` serves under /demo-mcp: the demo tools' orders, reached over MCP.

An MCP server built with the official SDK (its MCPServer, once FastMCP), as a team would put one in
front of its own API, so MCP tools can be listed (GET /api/v1/agent/tools shows `demo__…`) and called
with no setup. `use_demo_mcp` points MCP_SERVERS at it unless MCP_SERVERS names other servers.
Never deployed: only the dev server mounts it.

Like the demo tool API (demo_tools.py) it acts only for the caller the service vouches for: each call
must carry a caller assertion (`X-Caller-Assertion`, `identity: assertion`) that verifies against the
dev server's key set, and only the account its directory gives that caller is served, whatever
account the model named.
"""

import json
import os
from typing import Any, Literal

from devserver.demo_tools import ORDERS, Assertions, account_of

MOUNT = "/demo-mcp"


def demo_mcp_server(assertions: Assertions) -> Any:
    # No `from __future__ import annotations` in this module: the SDK reads each tool's annotations,
    # and `Context` exists only here, where the SDK is imported when the server is first built.
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError  # its words reach the model; others' do not

    server = MCPServer("demo", instructions="Orders of the demo shop", log_level="WARNING")
    cancelled: set[str] = set()

    def mine(ctx: Context, account_id: str) -> None:
        """Refuse unless the verified caller's own account is the one named."""
        request = ctx.request_context.request
        try:
            caller = assertions.verified(request.headers.get("x-caller-assertion") if request else None)
        except ValueError as exc:
            raise ToolError(str(exc)) from None
        if account_of(caller) != account_id:
            raise ToolError(f"Account {account_id} is not the caller's")

    def owned(order_id: str, account_id: str) -> dict[str, Any]:
        found = ORDERS.get(order_id)
        if found is None or found["accountId"] != account_id:
            raise ToolError(f"No order {order_id} in account {account_id}")
        return found

    @server.tool()
    def get_order_status(orderId: str, accountId: str, ctx: Context) -> dict[str, Any]:
        """Look up the status, items, carrier and delivery estimate of one order of the customer's account"""
        mine(ctx, accountId)
        status = {"status": "cancelled"} if orderId in cancelled else {}
        return {"orderId": orderId, **owned(orderId, accountId), **status}

    @server.tool()
    def list_orders(
        accountId: str,
        ctx: Context,
        status: Literal["processing", "shipped", "delivered"] | None = None,
    ) -> dict[str, Any]:
        """List the orders of the customer's account, optionally only those with one status"""
        mine(ctx, accountId)
        listed = [
            {"orderId": oid, "status": "cancelled" if oid in cancelled else o["status"]}
            for oid, o in ORDERS.items()
            if o["accountId"] == accountId and status in (None, o["status"])
        ]
        return {"accountId": accountId, "orders": listed}

    @server.tool()
    def cancel_order(orderId: str, accountId: str, ctx: Context) -> dict[str, Any]:
        """Cancel one order of the customer's account that has not shipped yet (asks the user to approve first)"""
        mine(ctx, accountId)
        found = owned(orderId, accountId)
        if found["status"] != "processing" or orderId in cancelled:
            raise ToolError(f"Order {orderId} can no longer be cancelled")
        cancelled.add(orderId)
        return {"orderId": orderId, "status": "cancelled"}

    return server


class DemoMcpApp:
    """The demo server over streamable HTTP (stateless, answers as SSE streams), built at its first request."""

    def __init__(self, service: str, issuer: str) -> None:
        """`service`: the dev server's URL (its key set, and this server's origin); `issuer`: the assertions' iss."""
        self._server: Any = None
        self._assertions = (service, issuer)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        from rag_orchestrator.api.mcp import serve_stateless  # `make dev` puts the package on the path later

        if self._server is None:  # MCPServer's transport serves its low-level server, as its own apps do
            service, issuer = self._assertions
            assertions = Assertions(service, issuer, audience=service)
            self._server = demo_mcp_server(assertions)._lowlevel_server
        await serve_stateless(self._server, scope, receive, send, json_response=False)


def use_demo_mcp(port: str, environ: dict[str, str] | None = None) -> None:
    """Point MCP_SERVERS at the demo MCP server on this port, unless it names others."""
    environ = os.environ if environ is None else environ
    demo = {
        "name": "demo",
        "url": f"http://127.0.0.1:{port}{MOUNT}",
        "identity": "assertion",
        "contexts": ["orders"],
        "approval": ["cancel_order"],
        "timeoutSeconds": 5,
    }
    environ.setdefault("MCP_SERVERS", json.dumps({"servers": [demo]}))
