"""The streaming function's Lambda context in its logs.

ChatStreamFunction runs uvicorn behind the Lambda Web Adapter: no handler exists for Powertools'
`inject_lambda_context` and `log_metrics` to decorate. The adapter forwards the invocation's context
as JSON in the `x-amzn-lambda-context` header (`request_id`, `invoked_function_arn`, `env_config` with
`function_name` and `memory`, ...); this middleware appends it to every log line of the request under
the keys Powertools uses in the other functions (one invocation at a time per execution environment,
so process-wide keys are safe). The app's MetricsFlushMiddleware flushes the request's metrics.
"""

from __future__ import annotations

import json
import os
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from rag_orchestrator.observability import logger

HEADER = b"x-amzn-lambda-context"
_cold = True


def context_keys(raw: str | None) -> dict[str, Any]:
    """Powertools' Lambda-context log keys from the adapter's header; empty when there is none."""
    global _cold
    try:
        context = json.loads(raw) if raw else None
    except ValueError:
        context = None
    if not isinstance(context, dict):
        return {}
    found = context.get("env_config")
    config: dict[str, Any] = found if isinstance(found, dict) else {}
    keys = {
        "function_name": config.get("function_name") or os.environ.get("AWS_LAMBDA_FUNCTION_NAME"),
        "function_memory_size": config.get("memory") or os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE"),
        "function_arn": context.get("invoked_function_arn"),
        "function_request_id": context.get("request_id"),
        "xray_trace_id": context.get("xray_trace_id"),
        "cold_start": _cold,
    }
    _cold = False
    return {key: value for key, value in keys.items() if value is not None}


class LambdaContextMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        raw = next((v.decode("latin-1") for k, v in scope.get("headers", ()) if k == HEADER), None)
        keys = context_keys(raw)
        logger.append_keys(**keys)
        try:
            await self.app(scope, receive, send)
        finally:
            logger.remove_keys(list(keys))
