"""Logger, metrics and tracer, created once and imported everywhere."""

from __future__ import annotations

import logging
import os

from aws_lambda_powertools import Logger, Metrics, Tracer

SERVICE = os.environ.get("POWERTOOLS_SERVICE_NAME", "rag-orchestrator")
NAMESPACE = os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "RagOrchestrator")

# Seed 002: reasoning traces are logged for audit at TRACE, below DEBUG.
TRACE = 5
logging.addLevelName(TRACE, "TRACE")

logger = Logger(service=SERVICE)
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)
tracer = Tracer(service=SERVICE)


def audit_thinking(sanitized: str, **keys: object) -> None:
    """Log a sanitized reasoning trace at TRACE with the `[thinking][audit]` prefix."""
    if logger._logger.isEnabledFor(TRACE):
        logger._logger.log(TRACE, "[thinking][audit] %s", sanitized, extra=keys)
