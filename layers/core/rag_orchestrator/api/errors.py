"""Every error becomes the error JSON of docs/errors.md: {"error", "message", "timestamp", "requestId"}. No stack traces."""

from __future__ import annotations

import math
from datetime import UTC, datetime

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from rag_orchestrator.errors import RagError
from rag_orchestrator.observability import logger

_TITLES = {
    400: "Bad request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not found",
    405: "Method not allowed",
    409: "Conflict",
    413: "Payload too large",
    415: "Unsupported media type",
    422: "Validation failed",
    429: "Too many requests",
    500: "Internal error",
    502: "Bad gateway",
    503: "Service unavailable",
}


def error_body(status: int, message: str, request_id: str | None, error: str | None = None) -> dict:
    return {
        "error": error or _TITLES.get(status, "Error"),
        "message": message,
        "timestamp": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
        "requestId": request_id,
    }


def error_response(
    request: Request, status: int, message: str, error: str | None = None, retry_after: float | None = None
) -> JSONResponse:
    request_id = getattr(request.state, "request_id", None)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else {}
    if retry_after is not None:
        headers["Retry-After"] = str(max(1, math.ceil(retry_after)))
    return JSONResponse(error_body(status, message, request_id, error), status_code=status, headers=headers)


SEND_JSON = "Send the body as JSON, with Content-Type: application/json"


def describe_validation(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors()[:10]:
        if tuple(err.get("loc", ())) == ("body",) and err.get("type") == "missing":
            parts.append("A JSON body is required")
            continue
        loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
        msg = err.get("msg", "invalid").removeprefix("Value error, ")
        parts.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(parts) or "Invalid request"


def validation_failure(request: Request, exc: RequestValidationError) -> tuple[int, str]:
    """The status and message of a request that failed validation (docs/errors.md): 415 for a body not
    sent as JSON, 400 for JSON that cannot be parsed or text no system can hold, 422 for JSON that
    breaks the route's schema."""
    if isinstance(exc.body, bytes | bytearray) and exc.body:  # FastAPI keeps the raw bytes of a non-JSON body
        received = (request.headers.get("content-type") or "none")[:100]
        return 415, f"{SEND_JSON} (received Content-Type: {received})"
    kinds = {err.get("type") for err in exc.errors()}
    if "json_invalid" in kinds:
        return 400, "Malformed JSON body"
    # Text no system downstream can hold (lone surrogates, control characters) is malformed too.
    return (400 if "invalid_text" in kinds else 422), describe_validation(exc)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RagError)
    async def _rag_error(request: Request, exc: RagError) -> JSONResponse:
        if exc.status_code >= 500:
            logger.error("request failed", extra={"error_type": type(exc).__name__, "detail": exc.message})
        retry_after = exc.retry_after if exc.retryable else None
        return error_response(request, exc.status_code, exc.public_message, exc.error, retry_after)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(request, *validation_failure(request, exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        message = exc.detail if isinstance(exc.detail, str) else _TITLES.get(exc.status_code, "Error")
        if exc.status_code == 404 and message == "Not Found":
            message = f"No route for {request.method} {request.url.path}"
        return error_response(request, exc.status_code, message)
