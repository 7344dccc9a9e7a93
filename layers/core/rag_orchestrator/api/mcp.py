"""POST /mcp: the knowledge base as an MCP server over streamable HTTP, stateless, JSON responses
(docs/mcp.md).

The caller is authenticated like every route (api/auth.py: JWT, the dev header, guest tokens; the
anonymous caller when ALLOW_ANONYMOUS=true); the JSON-RPC exchange is then the SDK's own, so malformed
JSON-RPC and unknown methods get JSON-RPC errors. Each request is served whole by a session manager of
its own: nothing is kept between requests, which suits Lambda. The SDK loads on the first POST /mcp.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request, Response
from starlette.types import Receive, Scope, Send

from rag_orchestrator.api.auth import get_caller
from rag_orchestrator.api.deps import Services, services
from rag_orchestrator.api.mcp_caller import MCP_CALLER
from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.errors import UnsupportedMediaType

router = APIRouter(tags=["mcp"])

_JSONRPC = {
    "type": "object",
    "description": "A JSON-RPC 2.0 message of the Model Context Protocol",
    "required": ["jsonrpc"],
    "properties": {
        "jsonrpc": {"const": "2.0"},
        "id": {"type": ["string", "integer", "null"]},
        "method": {"type": "string"},
        "params": {"type": "object"},
        "result": {"type": "object"},
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {"code": {"type": "integer"}, "message": {"type": "string"}, "data": {}},
        },
    },
}
_JSON = {"application/json": {"schema": _JSONRPC}}
OPENAPI: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": _JSONRPC,
                "example": {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
            }
        },
    },
    "parameters": [
        {
            "name": "Accept",
            "in": "header",
            "required": True,
            "schema": {"type": "string", "default": "application/json, text/event-stream"},
            "description": "Must accept both application/json and text/event-stream (streamable HTTP)",
        }
    ],
    "responses": {
        "200": {"description": "The JSON-RPC response", "content": _JSON},
        "202": {"description": "A notification or response accepted; no body"},
        "400": {"description": "Not JSON, or not a JSON-RPC message: a JSON-RPC error", "content": _JSON},
        "406": {
            "description": "Accept does not allow both response types: a JSON-RPC error",
            "content": _JSON,
        },
        "413": {"description": "The body exceeds MAX_REQUEST_BYTES"},
        "415": {"description": "The body was not sent as JSON (Content-Type: application/json)"},
    },
}


async def serve_stateless(
    server: Any, scope: Scope, receive: Receive, send: Send, *, json_response: bool, max_bytes: int = 4 << 20
) -> None:
    """Serve one request with the SDK's streamable HTTP transport and a session manager of its own."""
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    manager = StreamableHTTPSessionManager(
        server, json_response=json_response, stateless=True, max_request_body_size=max_bytes
    )
    async with manager.run():
        await manager.handle_request(scope, receive, send)


class Exchange(Response):
    """Hands the request to the SDK's streamable HTTP transport, which answers it."""

    def __init__(self, services: Services, caller: Caller) -> None:
        super().__init__()
        self.services = services
        self.caller = caller

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        MCP_CALLER.set(self.caller)  # seen by the SDK's tasks, started from here on
        await serve_stateless(
            self.services.knowledge_mcp,
            scope,
            receive,
            send,
            json_response=True,
            max_bytes=self.services.settings.max_request_bytes,
        )


@router.post(
    "/mcp",
    summary="The knowledge base as an MCP server: tools search_knowledge_base and ask (streamable HTTP)",
    response_class=Response,
    openapi_extra=OPENAPI,
)
async def mcp(request: Request, caller: Caller = Depends(get_caller)) -> Response:
    """Any MCP client (desktop assistants, IDEs, agents) can search and ask the knowledge base here."""
    if not request.headers.get("content-type", "").lower().startswith("application/json"):
        raise UnsupportedMediaType("Send the JSON-RPC message as application/json")
    return Exchange(services(request), caller)
