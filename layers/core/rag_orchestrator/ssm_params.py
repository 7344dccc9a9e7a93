"""Secrets named by a reference: an SSM SecureString parameter or a Secrets Manager secret.

`/name/of/parameter` is an SSM parameter (decrypted); `secretsmanager:<name or ARN>`, or the secret's
ARN itself, is a Secrets Manager secret's string. `#key` after either picks one field of a JSON secret
(`secretsmanager:rag/keys#deepseek`). Values are cached 5 minutes and fetched once however many
threads ask: at a cold start the first turn's parts start together (the model client, the Chroma
client in a worker thread) and each may ask for a secret no one has fetched yet; without a lock per
reference, each would send the same request (bench/README.md, cold start). A composition root makes
one `SecretReader` on its `AwsClients` and hands it to its settings (`Settings.read_secrets_with`),
the tool catalogue and the MCP servers' headers.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from rag_orchestrator.aws import AwsClients

MAX_AGE_SECONDS = 300  # a rotated secret is picked up after this long
SECRETS_MANAGER = "secretsmanager:"
_SSM_NAME = re.compile(r"^/[A-Za-z0-9_.\-/]+$")
_SECRET_ID = re.compile(r"^[A-Za-z0-9/_+=.@-]+$")
_SECRET_ARN = re.compile(r"^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:[A-Za-z0-9/_+=.@-]+$")
_JSON_KEY = re.compile(r"^[A-Za-z0-9_.\-]+$")

Store = Literal["ssm", "secretsmanager"]


@dataclass(frozen=True, slots=True)
class SecretReference:
    store: Store
    name: str  # the parameter name, or the secret's name or ARN
    key: str | None = None  # a field of a JSON secret

    @classmethod
    def parse(cls, reference: str) -> SecretReference:
        """The reference's parts; ValueError saying which forms are accepted."""
        body, hashed, key = reference.partition("#")
        if hashed and not _JSON_KEY.match(key):
            raise ValueError(f"{reference!r}: '#' must be followed by a JSON field name")
        if _SSM_NAME.match(body):
            return cls("ssm", body, key or None)
        name = body.removeprefix(SECRETS_MANAGER)
        if _SECRET_ARN.match(name) or (body.startswith(SECRETS_MANAGER) and _SECRET_ID.match(name)):
            return cls("secretsmanager", name, key or None)
        raise ValueError(
            f"{reference!r} is neither an SSM parameter name (/path/name) nor a Secrets Manager "
            "reference (secretsmanager:<name or ARN>, or the secret's ARN)"
        )


def check_references(variables: Iterable[str]) -> None:
    """ValueError naming the first of these variables set to no known form of reference."""
    for variable in variables:
        reference = os.environ.get(variable)
        if reference:
            try:
                SecretReference.parse(reference)
            except ValueError as exc:
                raise ValueError(f"{variable}: {exc}") from None


class SecretReader:
    """Reads references through one set of AWS clients, with Powertools' caching providers on them."""

    def __init__(self, clients: AwsClients) -> None:
        self._clients = clients
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self._providers: dict[Store, tuple[Any, Any]] = {}  # store -> (client, provider on it)

    def read(self, reference: str) -> str:
        """The secret a reference names, from the cache or, once at a time, from AWS; ValueError for a
        reference of no known form or a secret without the string (field) it names."""
        parsed = SecretReference.parse(reference)
        with self._guard:
            lock = self._locks.setdefault(reference, threading.Lock())
        with lock:
            transform = "json" if parsed.key else None
            if parsed.store == "ssm":
                value = self._provider("ssm").get(
                    parsed.name, decrypt=True, max_age=MAX_AGE_SECONDS, transform=transform
                )
            else:
                value = self._provider("secretsmanager").get(
                    parsed.name, max_age=MAX_AGE_SECONDS, transform=transform
                )
        if parsed.key is not None:
            value = value.get(parsed.key) if isinstance(value, dict) else None
        if not isinstance(value, str):
            what = f"string field {parsed.key!r}" if parsed.key else "string value"
            raise ValueError(f"the secret {parsed.name} has no {what}")
        return value

    def _provider(self, store: Store) -> Any:
        """Powertools' caching provider on the root's client (not a session of its own); made anew with
        the client (after `AwsClients.reset`), so that its cache goes with it."""
        client = self._clients.client(store)
        with self._guard:
            made = self._providers.get(store)
            if made is None or made[0] is not client:
                from aws_lambda_powertools.utilities.parameters import SecretsProvider, SSMProvider

                provider = (
                    SSMProvider(boto3_client=client)
                    if store == "ssm"
                    else SecretsProvider(boto3_client=client)
                )
                made = self._providers[store] = (client, provider)
            return made[1]
