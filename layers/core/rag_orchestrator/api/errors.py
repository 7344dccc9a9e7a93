"""Every error becomes the error JSON of docs/errors.md: {"error", "message", "timestamp", "requestId"}. No stack traces."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse

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


class InvalidInput(Exception):
    """A request's input failed validation: FastAPI's error list, and the body as read (its bytes when
    it was not sent as JSON). Raised by api/endpoints.py; FastAPI's own RequestValidationError is the
    same to the client (install_error_handlers)."""

    def __init__(self, errors: list[dict[str, Any]], body: Any = None) -> None:
        super().__init__("invalid input")
        self._errors = errors
        self.body = body

    def errors(self) -> list[dict[str, Any]]:
        return self._errors


def describe_validation(errors: Sequence[dict[str, Any]]) -> str:
    parts = []
    for err in errors[:10]:
        if tuple(err.get("loc", ())) == ("body",) and err.get("type") == "missing":
            parts.append("A JSON body is required")
            continue
        loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
        msg = err.get("msg", "invalid").removeprefix("Value error, ")
        parts.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(parts) or "Invalid request"


def validation_failure(request: Request, errors: Sequence[dict[str, Any]], body: Any) -> tuple[int, str]:
    """The status and message of a request that failed validation (docs/errors.md): 415 for a body not
    sent as JSON, 400 for JSON that cannot be parsed or text no system can hold, 422 for JSON that
    breaks the route's schema."""
    if isinstance(body, bytes | bytearray) and body:  # FastAPI keeps the raw bytes of a non-JSON body
        received = (request.headers.get("content-type") or "none")[:100]
        return 415, f"{SEND_JSON} (received Content-Type: {received})"
    kinds = {err.get("type") for err in errors}
    if "json_invalid" in kinds:
        return 400, "Malformed JSON body"
    # Text no system downstream can hold (lone surrogates, control characters) is malformed too.
    return (400 if "invalid_text" in kinds else 422), describe_validation(errors)


async def _rag_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RagError)
    if exc.status_code >= 500:
        logger.error("request failed", extra={"error_type": type(exc).__name__, "detail": exc.message})
    retry_after = exc.retry_after if exc.retryable else None
    return error_response(request, exc.status_code, exc.public_message, exc.error, retry_after)


async def _invalid(request: Request, exc: Exception) -> JSONResponse:
    """An InvalidInput, or FastAPI's RequestValidationError: both carry `errors()` and `body`."""
    return error_response(request, *validation_failure(request, exc.errors(), exc.body))  # type: ignore[attr-defined]


async def _http(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    message = exc.detail if isinstance(exc.detail, str) else _TITLES.get(exc.status_code, "Error")
    if exc.status_code == 404 and message == "Not Found":
        message = f"No route for {request.method} {request.url.path}"
    return error_response(request, exc.status_code, message)


def install_error_handlers(app: Starlette, *invalid: type[Exception]) -> None:
    """The error JSON for the service's errors, HTTP errors (an unknown route's 404 too) and invalid
    input: InvalidInput, and the app's own kind of it (FastAPI's RequestValidationError) in `invalid`."""
    app.add_exception_handler(RagError, _rag_error)
    kinds: tuple[type[Exception], ...] = (InvalidInput, *invalid)
    for kind in kinds:
        app.add_exception_handler(kind, _invalid)
    app.add_exception_handler(StarletteHTTPException, _http)
