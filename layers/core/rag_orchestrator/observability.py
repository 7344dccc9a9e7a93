"""Logger and metrics, created once and imported everywhere.

No X-Ray SDK tracer: Powertools' Tracer pulls in aws-xray-sdk and botocore (~30 MB of the layer)
and, inside Lambda, patches every supported library at import (~0.3 s of a cold start as built),
while nothing here records subsegments. Lambda's active tracing (template.yaml) still traces
each invocation. See bench/README.md.
"""

from __future__ import annotations

import logging
import os

from aws_lambda_powertools import Logger, Metrics

SERVICE = os.environ.get("POWERTOOLS_SERVICE_NAME", "rag-orchestrator")
NAMESPACE = os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "RagOrchestrator")

# Seed 002: reasoning traces are logged for audit at TRACE, below DEBUG.
TRACE = 5
logging.addLevelName(TRACE, "TRACE")

logger = Logger(service=SERVICE)
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)


def flush_metrics() -> None:
    """Publish what has been added since the last flush (EMF on stdout); nothing when nothing was added.

    Cleared either way: with POWERTOOLS_METRICS_DISABLED, Powertools keeps them otherwise."""
    if metrics.metric_set:
        metrics.flush_metrics()
        metrics.provider.clear_metrics()


def log_enabled(level: int) -> bool:
    """Whether a record at `level` would be written: to skip building what would not be."""
    return logger._logger.isEnabledFor(level)


def audit_thinking(sanitized: str, **keys: object) -> None:
    """Log a sanitized reasoning trace at TRACE with the `[thinking][audit]` prefix."""
    if log_enabled(TRACE):
        logger._logger.log(TRACE, "[thinking][audit] %s", sanitized, extra=keys)
