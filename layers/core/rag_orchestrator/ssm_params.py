"""Secrets named by a reference: an SSM SecureString parameter or a Secrets Manager secret.

`/name/of/parameter` is an SSM parameter (decrypted); `secretsmanager:<name or ARN>`, or the secret's
ARN itself, is a Secrets Manager secret's string. `#key` after either picks one field of a JSON secret
(`secretsmanager:rag/keys#deepseek`). Values are cached 5 minutes and fetched once however many
threads ask: at a cold start the first turn's parts start together (the model client, the Chroma
client in a worker thread) and each may ask for a secret no one has fetched yet; without a lock per
reference, each would send the same request (bench/README.md, cold start).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

MAX_AGE_SECONDS = 300  # a rotated secret is picked up after this long
SECRETS_MANAGER = "secretsmanager:"
_SSM_NAME = re.compile(r"^/[A-Za-z0-9_.\-/]+$")
_SECRET_ID = re.compile(r"^[A-Za-z0-9/_+=.@-]+$")
_SECRET_ARN = re.compile(r"^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:[A-Za-z0-9/_+=.@-]+$")
_JSON_KEY = re.compile(r"^[A-Za-z0-9_.\-]+$")

_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


@dataclass(frozen=True, slots=True)
class SecretReference:
    store: Literal["ssm", "secretsmanager"]
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


def read_secret(reference: str) -> str:
    """The secret a reference names, from Powertools' cache or, once at a time, from AWS."""
    from rag_orchestrator import aws

    parsed = SecretReference.parse(reference)
    with _locks_guard:
        lock = _locks.setdefault(reference, threading.Lock())
    with lock:
        if parsed.store == "ssm":
            value = _ssm(aws.client("ssm")).get(
                parsed.name, decrypt=True, max_age=MAX_AGE_SECONDS, transform="json" if parsed.key else None
            )
        else:
            value = _secrets_manager(aws.client("secretsmanager")).get(
                parsed.name, max_age=MAX_AGE_SECONDS, transform="json" if parsed.key else None
            )
    if parsed.key is not None:
        value = value.get(parsed.key) if isinstance(value, dict) else None
    if not isinstance(value, str):
        what = f"string field {parsed.key!r}" if parsed.key else "string value"
        raise ValueError(f"the secret {parsed.name} has no {what}")
    return value


# Powertools' caching providers on our shared session and client config (not a session of their own).
@lru_cache(maxsize=2)
def _ssm(client: Any) -> Any:
    from aws_lambda_powertools.utilities.parameters import SSMProvider

    return SSMProvider(boto3_client=client)


@lru_cache(maxsize=2)
def _secrets_manager(client: Any) -> Any:
    from aws_lambda_powertools.utilities.parameters import SecretsProvider

    return SecretsProvider(boto3_client=client)
