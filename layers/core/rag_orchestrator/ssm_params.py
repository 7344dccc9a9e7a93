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

import json
import os
import re
import threading
import time
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
    """Reads references through one set of AWS clients, each value kept MAX_AGE_SECONDS for the
    client that read it (a new client, after `AwsClients.reset`, reads again)."""

    def __init__(self, clients: AwsClients) -> None:
        self._clients = clients
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self._kept: dict[tuple[Store, str], tuple[float, Any, str | None]] = {}  # (at, client, value)

    def read(self, reference: str) -> str:
        """The secret a reference names, from the cache or, once at a time, from AWS; ValueError for a
        reference of no known form or a secret without the string (field) it names."""
        parsed = SecretReference.parse(reference)
        with self._guard:  # one fetch at a time per secret, whichever of its fields is asked for
            lock = self._locks.setdefault(f"{parsed.store}:{parsed.name}", threading.Lock())
        with lock:
            value: Any = self._value(parsed)
        if parsed.key is not None:
            try:
                fields = json.loads(value) if isinstance(value, str) else None
            except ValueError:  # not JSON: it has no fields
                fields = None
            value = fields.get(parsed.key) if isinstance(fields, dict) else None
        if not isinstance(value, str):
            what = f"string field {parsed.key!r}" if parsed.key else "string value"
            raise ValueError(f"the secret {parsed.name} has no {what}")
        return value

    def _value(self, parsed: SecretReference) -> str | None:
        """The stored string, kept or fetched; None for a secret held as binary."""
        client = self._clients.client(parsed.store)
        kept = self._kept.get((parsed.store, parsed.name))
        if kept is not None and kept[1] is client and time.monotonic() - kept[0] < MAX_AGE_SECONDS:
            return kept[2]
        if parsed.store == "ssm":
            value = client.get_parameter(Name=parsed.name, WithDecryption=True)["Parameter"]["Value"]
        else:
            value = client.get_secret_value(SecretId=parsed.name).get("SecretString")
        self._kept[(parsed.store, parsed.name)] = (time.monotonic(), client, value)
        return value
