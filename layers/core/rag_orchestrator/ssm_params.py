"""Secrets from SSM Parameter Store: decrypted, cached 5 minutes, fetched once however many threads ask.

At a cold start the first turn's parts start together (the model client, the Chroma client in a worker
thread) and each may ask for a secret no one has fetched yet; without a lock per parameter, each would
send the same GetParameter (bench/README.md, cold start). A composition root makes one `SsmSecrets`
on its `AwsClients` and gives it to its settings (`Settings.read_secrets_with`).
"""

from __future__ import annotations

import threading
from typing import Any

from rag_orchestrator.aws import AwsClients

MAX_AGE_SECONDS = 300  # a rotated secret is picked up after this long


class SsmSecrets:
    def __init__(self, clients: AwsClients) -> None:
        self._clients = clients
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self._provider: tuple[Any, Any] | None = None  # (client, Powertools' provider on it)

    def get(self, parameter: str) -> str:
        """The decrypted parameter, from Powertools' cache or, once at a time, from SSM."""
        with self._guard:
            lock = self._locks.setdefault(parameter, threading.Lock())
        with lock:
            return self._cache().get(parameter, decrypt=True, max_age=MAX_AGE_SECONDS)

    def _cache(self) -> Any:
        """Powertools' caching provider on the root's SSM client (not a session of its own); made anew
        with the client (after `AwsClients.reset`), so that its cache goes with it."""
        client = self._clients.client("ssm")
        with self._guard:
            if self._provider is None or self._provider[0] is not client:
                from aws_lambda_powertools.utilities.parameters import SSMProvider

                self._provider = (client, SSMProvider(boto3_client=client))
            return self._provider[1]
