"""boto3 clients, created once per process with timeouts and adaptive retries."""

from __future__ import annotations

from functools import lru_cache
from typing import Any


@lru_cache(maxsize=8)
def client(service: str) -> Any:
    import boto3
    from botocore.config import Config

    config = Config(
        connect_timeout=3,
        read_timeout=10,
        retries={"mode": "adaptive", "max_attempts": 5},
        max_pool_connections=32,
    )
    return boto3.session.Session().client(service, config=config)
