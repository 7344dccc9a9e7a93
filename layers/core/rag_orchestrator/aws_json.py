"""A client of AWS's JSON protocol (DynamoDB, SSM, Secrets Manager), without boto3
(docs/performance.md, "Requests without boto3").

Importing boto3 and making its DynamoDB and SSM clients was a quarter of a second of CPU of every
cold chat-stream instance's first turn (botocore loads and indexes each service's model). These
services take a request as the JSON of the call's parameters, which boto3's low-level client names
the same way, so `client.get_item(TableName=..., Key=...)` sends the body boto3 would and returns the
dict boto3 would: binary values as bytes, `ResponseMetadata` beside. What boto3 adds is kept:

- SigV4 (aws_sigv4.py), with the environment's credentials;
- kept-alive connections (`http_pool`: ~0.9 ms less client CPU a request than httpx);
- the endpoint from AWS_ENDPOINT_URL_<SERVICE> or AWS_ENDPOINT_URL, else the region's;
- retries as botocore's standard mode: connection errors, 5xx and throttling, up to `max_attempts`
  in all, each after a random pause of up to 2^n seconds (20 at most);
- errors as botocore raises them: `ClientError` with `Error.Code`, `Error.Message` and the error's
  own fields (a cancelled transaction's `CancellationReasons`, a refused condition's `Item`), and
  `EndpointConnectionError`, `ConnectTimeoutError` or `ReadTimeoutError` when AWS cannot be reached.

The endpoint, the retries and the errors are aws_wire.py's, shared with Bedrock's client (aws_bedrock.py).
Its events are aws_events.py's, as S3's client (aws_s3.py) emits them.

`AwsClients` (aws.py) uses it only where the environment holds credentials and a region, as Lambda's
always does; elsewhere (a profile, SSO, an instance role) boto3's client, which finds those.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

from rag_orchestrator.aws_events import Meta, Observed
from rag_orchestrator.aws_sigv4 import Credentials
from rag_orchestrator.aws_wire import SignedClient, exchange, response_metadata
from rag_orchestrator.http_pool import Answer


@dataclass(frozen=True)
class Service:
    """What tells one JSON-protocol service's requests apart."""

    name: str  # its signing name and endpoint prefix
    target: str  # X-Amz-Target's prefix
    version: str  # the JSON protocol's version: application/x-amz-json-<version>
    env: str  # the service's part of AWS_ENDPOINT_URL_<env>
    event: str  # its part of botocore's event names (the service id, hyphenated)


SERVICES = {
    "dynamodb": Service("dynamodb", "DynamoDB_20120810", "1.0", "DYNAMODB", "dynamodb"),
    "ssm": Service("ssm", "AmazonSSM", "1.1", "SSM", "ssm"),
    "secretsmanager": Service(
        "secretsmanager", "secretsmanager", "1.1", "SECRETS_MANAGER", "secrets-manager"
    ),
}


class JsonClient(SignedClient):
    """One service's client: each snake_case method is the operation of that name."""

    def __init__(self, service: Service, credentials: Credentials, region: str, **options: Any) -> None:
        """`options`: SignedClient's timeouts and attempts."""
        self.names = (service.name, service.env, service.name)
        super().__init__(credentials, region, **options)
        self.service = service
        self.meta = Meta(service.name, region, self.url)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        operation = "".join(part.title() for part in name.split("_"))

        def call(**params: Any) -> dict[str, Any]:
            return self.call(operation, params)

        return call

    def call(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        call = Observed(self.meta.events, self.service.event, operation, params)
        body = json.dumps(params, default=_encoded, separators=(",", ":")).encode()
        call.before("POST", self.url, "/", self._headers(operation), body)

        def send() -> Answer:
            call.sending()
            return self._post("/", self._headers(operation), body)

        response, attempt, error = exchange(send, operation, self.url, self.max_attempts, _binary)
        parsed = _decoded(json.loads(response.body), response, attempt) if error is None else error.response
        call.after(response, parsed)
        if error is not None:
            raise error
        return parsed

    def _headers(self, operation: str) -> dict[str, str]:
        return {
            "Content-Type": f"application/x-amz-json-{self.service.version}",
            "X-Amz-Target": f"{self.service.target}.{operation}",
        }


def _encoded(value: Any) -> Any:
    """What JSON holds for a value boto3 would serialize: binary as base64."""
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode()
    raise TypeError(f"{type(value).__name__} is not sent to AWS")


def _binary(value: Any) -> Any:
    """A response with its binary attribute values as bytes (an AttributeValue `B` or `BS`, whose
    value is base64; anywhere else a `B` key holds an object, never a string)."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, inner in value.items():
            if key == "B" and isinstance(inner, str):
                out[key] = base64.b64decode(inner)
            elif key == "BS" and isinstance(inner, list) and all(isinstance(v, str) for v in inner):
                out[key] = [base64.b64decode(v) for v in inner]
            else:
                out[key] = _binary(inner)
        return out
    if isinstance(value, list):
        return [_binary(v) for v in value]
    return value


def _decoded(body: dict[str, Any], response: Answer, attempt: int) -> dict[str, Any]:
    return {**_binary(body), "ResponseMetadata": response_metadata(response, attempt)}
