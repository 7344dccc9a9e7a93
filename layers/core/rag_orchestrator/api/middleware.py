"""ASGI middleware: request ids for logs and errors, metrics flushed per request, the body size limit.

A request's id is always this service's (API Gateway's, the Function URL's, or a new UUID): it is what
the error JSON, the `x-request-id` header and the audit record carry. A client's own `X-Request-Id`
(at most 128 printable ASCII characters, else ignored) is only logged beside it and kept in the
turn's audit record as `clientRequestId`, so a client can neither forge nor collide with ours.
"""

from __future__ import annotations

import json
import uuid

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rag_orchestrator.api.errors import error_body
from rag_orchestrator.domain.text import printable_ascii
from rag_orchestrator.observability import bind_request_id, flush_metrics, logger


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return value.decode("latin-1")
    return None


def client_request_id(scope: Scope) -> str | None:
    """The client's X-Request-Id when it is at most 128 printable ASCII characters; None otherwise."""
    supplied = _header(scope, b"x-request-id")
    return supplied if supplied and len(supplied) <= 128 and printable_ascii(supplied) else None


def _lambda_request_id(scope: Scope) -> str | None:
    """API Gateway's request id (Mangum's event), or the Function URL's (the Web Adapter's header)."""
    context = (scope.get("aws.event") or {}).get("requestContext")
    if context is None:
        try:
            context = json.loads(_header(scope, b"x-amzn-request-context") or "null")
        except ValueError:
            context = None
    request_id = context.get("requestId") if isinstance(context, dict) else None
    return request_id if isinstance(request_id, str) and len(request_id) <= 128 else None


class RequestContextMiddleware:
    """Gives every request this service's id (API Gateway's, or new) and logs with it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = _lambda_request_id(scope) or str(uuid.uuid4())
        state = scope.setdefault("state", {})
        state["request_id"] = request_id
        logger.set_correlation_id(request_id)
        bind_request_id(request_id)
        supplied = client_request_id(scope)
        if supplied:
            state["client_request_id"] = supplied
            logger.info("client request id", extra={"client_request_id": supplied, "path": scope.get("path")})

        started = False

        async def send_with_id(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                message.setdefault("headers", []).append((b"x-request-id", request_id.encode("latin-1")))
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception:
            # Handled here rather than by Starlette's outermost middleware, so the answer keeps its id.
            logger.exception("unhandled error")
            if started:
                raise
            await send_json(send_with_id, 500, error_body(500, "An unexpected error occurred", request_id))


class MetricsFlushMiddleware:
    """Publishes the metrics a request added once its response is complete — after the last byte of a
    stream — on both apps: the streaming function has no handler decorator to do it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.app(scope, receive, send)
        finally:
            if scope["type"] == "http":
                flush_metrics()


class BodySizeLimitMiddleware:
    """Answers 413 before the app reads a body over `max_bytes`, declared or streamed."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _header(scope, b"content-length")
        if declared and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(scope, send)
            return
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    # An HTTPException, so FastAPI's body parsing re-raises it unchanged.
                    raise HTTPException(413, self._message)
            return message

        await self.app(scope, limited_receive, send)

    @property
    def _message(self) -> str:
        return f"Request body exceeds {self.max_bytes} bytes"

    async def _refuse(self, scope: Scope, send: Send) -> None:
        request_id = (scope.get("state") or {}).get("request_id")
        await send_json(send, 413, error_body(413, self._message, request_id))


async def send_json(send: Send, status: int, payload: dict) -> None:
    body = json.dumps(payload).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
