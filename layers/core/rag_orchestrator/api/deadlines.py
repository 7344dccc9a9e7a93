"""When a turn must end: its function's own deadline less TURN_DEADLINE_MARGIN_SECONDS.

Under Mangum (the REST function) the Lambda context is in the ASGI scope as `aws.context`. Behind the
Lambda Web Adapter (the streaming function) the adapter sends the invocation's context as the JSON
header `x-amzn-lambda-context`, whose `deadline` is the epoch millisecond Lambda stops the function
(the Rust runtime's `Context`, serialized as is); the adapter sets it itself, replacing any a client
sent. Without either (a dev server) a turn may run TURN_DEFAULT_BUDGET_SECONDS.
"""

from __future__ import annotations

import json
import math
import time

from starlette.requests import Request

from rag_orchestrator.config import Settings

LAMBDA_CONTEXT_HEADER = "x-amzn-lambda-context"
LAMBDA_MAX_SECONDS = 900  # no function runs longer: a deadline further out is not Lambda's


def turn_deadline(request: Request, settings: Settings) -> float:
    """Epoch seconds by which a turn started by this request must have ended."""
    now = time.time()
    remaining = _remaining_seconds(request, now)
    if remaining is None:
        return now + settings.turn_default_budget_seconds
    return now + min(remaining, LAMBDA_MAX_SECONDS) - settings.turn_deadline_margin_seconds


def _remaining_seconds(request: Request, now: float) -> float | None:
    context = request.scope.get("aws.context")
    if context is not None and hasattr(context, "get_remaining_time_in_millis"):
        return float(context.get_remaining_time_in_millis()) / 1000
    header = request.headers.get(LAMBDA_CONTEXT_HEADER)
    if not header:
        return None
    try:
        deadline = float(json.loads(header)["deadline"]) / 1000
    except (ValueError, TypeError, KeyError):
        return None
    return deadline - now if math.isfinite(deadline) else None  # JSON's NaN and -Infinity are no deadline
