"""What AWS's clients without boto3 share (aws_json.py, aws_bedrock.py; docs/performance.md, "Requests
without boto3"): the environment's credentials and region, a service's endpoint, botocore's standard
retries, and botocore's errors — `ClientError` with `Error.Code`, `Error.Message` and the error's own
fields, or `EndpointConnectionError`, `ConnectTimeoutError` or `ReadTimeoutError` when AWS cannot be
reached."""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from botocore.exceptions import ClientError, ConnectTimeoutError, EndpointConnectionError, ReadTimeoutError

from rag_orchestrator.aws_sigv4 import Credentials, Signer
from rag_orchestrator.http_pool import Answer, Request, Timeout, WireTimeout, WireUnreachable, wire_for

# botocore's standard mode: its throttling codes and its transient ones (retries/standard.py), and ours.
_RETRIED_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottledException",
        "TooManyRequestsException",
        "ProvisionedThroughputExceededException",
        "TransactionInProgressException",
        "RequestLimitExceeded",
        "RequestThrottled",
        "LimitExceededException",
        "BandwidthLimitExceeded",
        "SlowDown",
        "PriorRequestNotComplete",
        "EC2ThrottledException",
        "RequestTimeout",
        "RequestTimeoutException",
        "InternalServerError",
    }
)
_FIELDS_OF_ERROR = frozenset({"__type", "message", "Message"})

Fields = Callable[[dict[str, Any]], dict[str, Any]]
ErrorOf = Callable[[str, Answer, int], ClientError]  # an error answer read: its operation, it, its attempt


def environment() -> tuple[Credentials, str] | None:
    """The credentials and region the environment holds, when it holds both (Lambda's does)."""
    key, secret = os.environ.get("AWS_ACCESS_KEY_ID"), os.environ.get("AWS_SECRET_ACCESS_KEY")
    region = os.environ.get("AWS_DEFAULT_REGION") or os.environ.get("AWS_REGION")
    if not (key and secret and region) or os.environ.get("AWS_USE_FIPS_ENDPOINT") == "true":
        return None
    return Credentials(key, secret, os.environ.get("AWS_SESSION_TOKEN") or None), region


def endpoint(prefix: str, env: str, region: str) -> str:
    """AWS_ENDPOINT_URL_<env>, else AWS_ENDPOINT_URL, else the region's `https://<prefix>.<region>...`;
    with a closing slash."""
    configured = os.environ.get(f"AWS_ENDPOINT_URL_{env}") or os.environ.get("AWS_ENDPOINT_URL")
    if configured:
        return configured.rstrip("/") + "/"
    suffix = "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"
    return f"https://{prefix}.{region}.{suffix}/"


class SignedClient:
    """A service's endpoint as a client without boto3 reaches it: its URL, a SigV4 signer, the timeouts
    and the pooled connections (TLS with the process's one context, tls.py); `_post` signs and sends."""

    names: tuple[str, str, str]  # the endpoint's prefix, its AWS_ENDPOINT_URL_<env>, the signing name

    def __init__(
        self,
        credentials: Credentials,
        region: str,
        *,
        connect_timeout: float = 3,
        read_timeout: float = 10,
        max_attempts: int = 5,
    ) -> None:
        prefix, env, signing_name = self.names
        self.url = endpoint(prefix, env, region)
        self.max_attempts = max_attempts
        parts = urlsplit(self.url)
        self._origin, self._root = f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")
        self._signer = Signer(credentials, region, signing_name)
        self._timeout = Timeout(connect=connect_timeout, read=read_timeout)
        self._wire = wire_for(self.url, "", {})

    def _post(self, path: str, headers: dict[str, str], body: bytes) -> Answer:
        """One signed POST of `body` to `path` (escaped) under the endpoint's own path."""
        path = self._root + path
        signed = self._signer.headers("POST", self._origin + path, headers, body)
        return self._wire.send(Request("POST", path, body, self._timeout, signed))

    def close(self) -> None:
        self._wire.close()


def exchange(
    send: Callable[[], Answer],
    operation: str,
    url: str,
    max_attempts: int,
    fields: Fields = dict,
    modeled: frozenset[str] = frozenset(),
    error_of: ErrorOf | None = None,
) -> tuple[Answer, int, ClientError | None]:
    """`send()` retried as botocore's standard mode retries: a connection failure, a 5xx, a throttle or
    an error the service's model calls retryable (`modeled`), up to `max_attempts` in all, each after a
    random pause of up to 2^n seconds (20 at most). The last answer, its attempt (from 0) and its
    ClientError when it is one (a JSON error, its own fields read by `fields`; else as `error_of` reads
    it); botocore's connection errors when the last attempt reached nothing."""
    for attempt in range(max_attempts):
        last = attempt == max_attempts - 1
        try:
            response = send()
        except (WireTimeout, WireUnreachable) as exc:
            if last:
                raise _unreachable(exc, url) from None
        else:
            error = None
            if response.status >= 300 and error_of is not None:
                error = error_of(operation, response, attempt)
            elif response.status >= 300:
                error = _client_error(operation, response, attempt, fields)
            if error is None or last or not _retried(response.status, error, modeled):
                return response, attempt, error
        time.sleep(random.random() * min(20, 2**attempt))
    raise AssertionError("unreachable")  # the last attempt returns or raises


def response_metadata(response: Answer, attempt: int) -> dict[str, Any]:
    return {
        "RequestId": response.headers.get("x-amzn-requestid", ""),
        "HTTPStatusCode": response.status,
        "HTTPHeaders": dict(response.headers),
        "RetryAttempts": attempt,
    }


def _client_error(operation: str, response: Answer, attempt: int, fields: Fields) -> ClientError:
    try:
        body = json.loads(response.body)
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    kind = str(body.get("__type") or response.headers.get("x-amzn-errortype") or response.status)
    code = kind.rsplit("#", 1)[-1].split(":", 1)[0]
    parsed = {
        "Error": {"Code": code, "Message": str(body.get("message") or body.get("Message") or "")},
        "ResponseMetadata": response_metadata(response, attempt),
        **fields({key: value for key, value in body.items() if key not in _FIELDS_OF_ERROR}),
    }
    return ClientError(parsed, operation)


def _retried(status: int, error: ClientError, modeled: frozenset[str]) -> bool:
    code = error.response["Error"]["Code"]
    return status >= 500 or code in _RETRIED_CODES or code in modeled


def _unreachable(exc: WireTimeout | WireUnreachable, url: str) -> Exception:
    if isinstance(exc, WireTimeout) and exc.connect:
        return ConnectTimeoutError(endpoint_url=url, error=str(exc))
    if isinstance(exc, WireTimeout):
        return ReadTimeoutError(endpoint_url=url, error=str(exc))
    return EndpointConnectionError(endpoint_url=url, error=str(exc))
