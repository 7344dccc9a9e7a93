"""AWS clients of one session, each made on first use, with timeouts and retries.

DynamoDB, SSM and Secrets Manager speak AWS's JSON protocol: where the environment holds credentials
and a region (Lambda's always does), their client is aws_json.py's, which sends what boto3 would
without importing boto3 (a quarter of a second of a cold start's first turn); Bedrock Runtime's, for
the default embedder's InvokeModel, is aws_bedrock.py's; S3's GetObject and PutObject of what a function
reads when it starts (`objects()`), aws_s3.py's. Every other service, and these
elsewhere (a profile, SSO, an instance role), get boto3's client with adaptive retries.

A composition root (api/deps.py, each function's app.py) makes one `AwsClients` and hands it to what
talks to AWS; nothing below the roots makes a session or a client of its own. One Session loads
botocore's endpoint and credential data once (a Session per client cost ~40 ms more per client at
cold start). Creating clients on a Session is not thread-safe, hence the lock; the clients themselves
are. `lazy()` defers even that to the first call, for clients a request may never use (the
conversation store's S3 client is only for large contents).
"""

from __future__ import annotations

import threading
from typing import Any

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


# The services aws_json.py serves, and those with a client of their own without boto3; each module is
# imported only when one of its services is asked for.
JSON_SERVICES = frozenset({"dynamodb", "ssm", "secretsmanager"})
OBJECTS = "s3:objects"  # S3's GetObject and PutObject alone (aws_s3.py), for what a function reads at start
WITHOUT_BOTO3 = JSON_SERVICES | {"bedrock-runtime", OBJECTS}  # bedrock-runtime: InvokeModel (aws_bedrock.py)


class AwsClients:
    """The clients of one session, one per service and configuration, made when first asked for."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._session: Any = None
        self._clients: dict[tuple[str, float, int], Any] = {}

    def client(self, service: str, *, read_timeout: float = 10, max_attempts: int = 5) -> Any:
        key = (service, read_timeout, max_attempts)
        made = self._clients.get(key)
        if made is not None:
            return made
        with self._lock:
            if key not in self._clients:
                self._clients[key] = self._make(service, read_timeout, max_attempts)
            return self._clients[key]

    def _make(self, service: str, read_timeout: float, max_attempts: int) -> Any:
        """A new client (under the lock: a Session is not thread-safe)."""
        if service in WITHOUT_BOTO3:
            from rag_orchestrator.aws_wire import environment

            found = environment()
            if found is not None and service == "bedrock-runtime":
                from rag_orchestrator.aws_bedrock import BedrockRuntime

                return BedrockRuntime(*found, read_timeout=read_timeout, max_attempts=max_attempts)
            if found is not None and service == OBJECTS:
                from rag_orchestrator.aws_s3 import S3Objects

                return S3Objects(*found, read_timeout=read_timeout, max_attempts=max_attempts)
            if found is not None:
                from rag_orchestrator import aws_json

                return aws_json.JsonClient(
                    aws_json.SERVICES[service], *found, read_timeout=read_timeout, max_attempts=max_attempts
                )
        service = "s3" if service == OBJECTS else service  # boto3's S3 client has both operations
        from botocore.config import Config

        config = Config(
            connect_timeout=3,
            read_timeout=read_timeout,
            retries={"mode": "adaptive", "max_attempts": max_attempts},
            max_pool_connections=32,
            **_SERVICE_CONFIG.get(service, {}),
        )
        if self._session is None:
            import boto3

            self._session = boto3.session.Session()
        return self._session.client(service, config=config)

    def objects(self) -> Any:
        """A client of S3's `get_object` and `put_object` alone, for what a function reads when it starts
        (a tool catalogue, the tool index's cache): aws_s3.py's where the environment holds credentials
        and a region, else boto3's S3 client."""
        return self.client(OBJECTS)

    def lazy(self, service: str) -> LazyClient:
        """Stands in for `client(service)` and makes it on first use."""
        return LazyClient(self, service)

    @property
    def made(self) -> int:
        """How many clients exist (the tests check what a request did not need)."""
        return len(self._clients)

    def reset(self) -> None:
        """Forget the session and clients (after a SnapStart restore, or a change of endpoint or
        credentials in the environment)."""
        with self._lock:
            self._session = None
            self._clients = {}


class LazyClient:
    def __init__(self, clients: AwsClients, service: str) -> None:
        self.service = service
        self._clients = clients

    def __getattr__(self, name: str) -> Any:
        return getattr(self._clients.client(self.service), name)


def error_code(exc: Exception) -> str:
    """The AWS error code of a botocore ClientError (`ValidationException`, ...), else the class name."""
    response = getattr(exc, "response", None)
    code = (response or {}).get("Error", {}).get("Code") if isinstance(response, dict) else None
    return str(code or type(exc).__name__)
