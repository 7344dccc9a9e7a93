"""boto3 clients, created once per process from one session, with timeouts and adaptive retries.

One shared Session loads botocore's endpoint and credential data once (a Session per client cost
~40 ms more per client at cold start). Creating clients on a Session is not thread-safe, hence the
lock; the clients themselves are. `LazyClient` defers even that to the first call, for clients a
request may never use (the conversation store's S3 client is only for large contents).
"""

from __future__ import annotations

import threading
from functools import lru_cache
from typing import Any

_lock = threading.Lock()
# Presigned URLs and POSTs signed with SigV4: botocore would otherwise presign some with SigV2, which
# regions opened since 2014 refuse and S3 has deprecated everywhere.
_SERVICE_CONFIG = {"s3": {"signature_version": "s3v4"}}

# Error codes that mean "too many requests now": a client may retry later (503 + Retry-After).
THROTTLING_CODES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "Throttling",
        "RequestLimitExceeded",
        "TooManyRequestsException",
        "ServiceQuotaExceededException",
        "SlowDown",
    }
)


@lru_cache(maxsize=1)
def _session() -> Any:
    import boto3

    return boto3.session.Session()


@lru_cache(maxsize=8)
def client(service: str, *, read_timeout: float = 10, max_attempts: int = 5) -> Any:
    from botocore.config import Config

    config = Config(
        connect_timeout=3,
        read_timeout=read_timeout,
        retries={"mode": "adaptive", "max_attempts": max_attempts},
        max_pool_connections=32,
        **_SERVICE_CONFIG.get(service, {}),
    )
    with _lock:
        return _session().client(service, config=config)


def error_code(exc: Exception) -> str:
    """The AWS error code of a botocore ClientError (`ValidationException`, ...), else the class name."""
    response = getattr(exc, "response", None)
    code = (response or {}).get("Error", {}).get("Code") if isinstance(response, dict) else None
    return str(code or type(exc).__name__)


def reset() -> None:
    """Forget the session and clients (after the endpoint or credentials in the environment change)."""
    with _lock:
        client.cache_clear()
        _session.cache_clear()


class LazyClient:
    """Stands in for `client(service)` and creates it on first use."""

    def __init__(self, service: str) -> None:
        self.service = service

    def __getattr__(self, name: str) -> Any:
        return getattr(client(self.service), name)
