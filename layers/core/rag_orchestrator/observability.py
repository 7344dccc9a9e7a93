"""Logger and metrics, created once and imported everywhere.

No X-Ray SDK tracer: Powertools' Tracer pulls in aws-xray-sdk and botocore (~30 MB of the layer)
and, inside Lambda, patches every supported library at import (~0.3 s of a cold start as built),
while nothing here records subsegments. Lambda's active tracing (template.yaml) still traces
each invocation. See bench/README.md.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import sys
import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging.formatter import RESERVED_LOG_ATTRS, LambdaPowertoolsFormatter

SERVICE = os.environ.get("POWERTOOLS_SERVICE_NAME", "rag-orchestrator")
NAMESPACE = os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "RagOrchestrator")

# Reasoning traces are logged for audit at TRACE, below DEBUG (docs/audit.md). The name must be registered
# before the Logger exists: Powertools hands LOG_LEVEL (or POWERTOOLS_LOG_LEVEL) to logging by name.
TRACE = 5
logging.addLevelName(TRACE, "TRACE")


def _numeric_level() -> int | None:
    """LOG_LEVEL=5 means TRACE too; Powertools passes a number through only as an argument."""
    raw = (os.environ.get("POWERTOOLS_LOG_LEVEL") or os.environ.get("LOG_LEVEL") or "").strip()
    return int(raw) if raw.isdigit() else None


_RESERVED = frozenset(RESERVED_LOG_ATTRS)  # Powertools looks each key up in a tuple of 24
_JSON_STARTS = frozenset('{["-0123456789')
_JSON_WORDS = frozenset({"true", "false", "null", "NaN", "Infinity"})


class _Formatter(LambdaPowertoolsFormatter):
    """Powertools' JSON formatter, line for line, without its try at reading every message as JSON:
    a plain message such as "turn usage" paid for a JSONDecodeError raised and caught on each line.
    And its serializer made once: `json.dumps` given options builds a new encoder for every line. And
    its default timestamp ("2026-11-27 03:29:18,168+0000") formatted once a second, not once a line.
    And a record's keys told from its extras by a set, not a tuple."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        if options.get("json_serializer") is None:
            self.json_serializer = json.JSONEncoder(
                default=self.json_default, separators=(",", ":"), indent=self.json_indent, ensure_ascii=False
            ).encode
        self._second: tuple[int, str, str] | None = None  # a second, its date and time, its UTC offset

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        if datefmt or self.datefmt or self.use_rfc3339_iso8601 or self.use_datetime_directive:
            return super().formatTime(record, datefmt)
        second, cached = int(record.created), self._second
        if cached is None or cached[0] != second:
            moment = self.converter(record.created)
            cached = self._second = (
                second,
                time.strftime("%Y-%m-%d %H:%M:%S", moment),
                time.strftime("%z", moment),
            )
        return f"{cached[1]},{int(record.msecs):03d}{cached[2]}"

    def _extract_log_keys(self, log_record: logging.LogRecord) -> dict[str, Any]:
        """Powertools' own, step for step: its format's keys, then the appended keys (a reserved
        attribute's value %-formatted from the record), then the record's extras."""
        record = log_record.__dict__.copy()
        record["asctime"] = self.formatTime(record=log_record)
        formatted: dict[str, Any] = {}
        for keys in (self.log_format, self.thread_safe_get_current_keys()):
            for key, value in keys.items():
                if value and key in _RESERVED:
                    if not isinstance(value, str):
                        raise ValueError(
                            "Logging keys that override reserved log attributes need to be type 'str', "
                            f"instead got '{type(value).__name__}'",
                        )
                    formatted[key] = value % record
                else:
                    formatted[key] = value
        formatted.update({key: value for key, value in record.items() if key not in _RESERVED})
        return formatted

    def _extract_log_message(self, log_record: logging.LogRecord) -> Any:
        message = log_record.msg
        if isinstance(message, str) and not log_record.args:
            text = message.strip(" \t\n\r")  # what json.loads skips around a document
            if text[:1] not in _JSON_STARTS and text not in _JSON_WORDS:
                return message  # no JSON document starts so: json.loads would raise
        return super()._extract_log_message(log_record)


logger = Logger(service=SERVICE, level=_numeric_level())
# The same options as the formatter Powertools made (its defaults and these keys), so clear_state keeps them.
logger.registered_handler.setFormatter(_Formatter(service=logger.service, sampling_rate=logger.sampling_rate))
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)

# The id of the request being served: per task, where the logger's correlation id is per process.
_request_id: ContextVar[str | None] = ContextVar("request_id", default=None)


def bind_request_id(request_id: str) -> None:
    _request_id.set(request_id)


def request_reference() -> str | None:
    """`request id <id>` for a client to quote when it reports a failure; None outside a request."""
    value = _request_id.get()
    return f"request id {value}" if value else None


_SECRET_LIKE = re.compile(r"(?i)\b(?:sk|pk|rk)-[A-Za-z0-9*._-]{6,}|\bbearer\s+[A-Za-z0-9*._~+/=-]{6,}")
MAX_LOGGED_DETAIL = 300


def redacted(text: str, *secrets: str | None, limit: int = MAX_LOGGED_DETAIL) -> str:
    """An upstream's text as it may be logged: the secrets and key- or bearer-like tokens masked,
    on one line, truncated. It is for the log only; clients never get an upstream's text."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[redacted]")
    return _SECRET_LIKE.sub("[redacted]", " ".join(text.split()))[:limit]


def since(started: float) -> float:
    """Milliseconds since a `time.perf_counter()` reading, for latency metrics."""
    return round((time.perf_counter() - started) * 1000, 1)


def flush_metrics() -> None:
    """Publish what has been added since the last flush (EMF on stdout); nothing when nothing was added.

    Cleared either way: with POWERTOOLS_METRICS_DISABLED, Powertools keeps them otherwise. EMF is
    print()ed: stdout is flushed, or a pipe would hold it until a later write, or for ever if the
    execution environment is frozen first."""
    if metrics.metric_set:
        metrics.flush_metrics()
        metrics.provider.clear_metrics()
        sys.stdout.flush()


def publishes_metrics[Handler: Callable[..., Any]](handler: Handler) -> Handler:
    """A Lambda handler whose metrics are published when it returns or fails; none added, nothing
    published (Powertools' `log_metrics` would warn "No application metrics to publish")."""

    @functools.wraps(handler)
    def publishing(*args: Any, **kwargs: Any) -> Any:
        try:
            return handler(*args, **kwargs)
        finally:
            flush_metrics()

    return publishing  # type: ignore[return-value]


def log_enabled(level: int) -> bool:
    """Whether a record at `level` would be written: to skip building what would not be."""
    return logger._logger.isEnabledFor(level)


def audit_thinking(sanitized: str, **keys: object) -> None:
    """Log a sanitized reasoning trace at TRACE with the `[thinking][audit]` prefix."""
    if log_enabled(TRACE):
        logger._logger.log(TRACE, "[thinking][audit] %s", sanitized, extra=keys)
