"""Secrets from SSM Parameter Store: decrypted, cached 5 minutes, fetched once however many threads ask.

At a cold start the first turn's parts start together (the model client, the Chroma client in a worker
thread) and each may ask for a secret no one has fetched yet; without a lock per parameter, each would
send the same GetParameter (bench/README.md, cold start).
"""

from __future__ import annotations

import threading
from functools import lru_cache
from typing import Any

MAX_AGE_SECONDS = 300  # a rotated secret is picked up after this long

_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def ssm_secret(parameter: str) -> str:
    """The decrypted parameter, from Powertools' cache or, once at a time, from SSM."""
    from rag_orchestrator import aws

    with _locks_guard:
        lock = _locks.setdefault(parameter, threading.Lock())
    with lock:
        return _provider(aws.client("ssm")).get(parameter, decrypt=True, max_age=MAX_AGE_SECONDS)


@lru_cache(maxsize=2)
def _provider(client: Any) -> Any:
    """Powertools' caching provider on our shared session and client config (not a session of its own)."""
    from aws_lambda_powertools.utilities.parameters import SSMProvider

    return SSMProvider(boto3_client=client)
