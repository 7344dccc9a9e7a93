"""Bedrock Runtime's InvokeModel without boto3 (docs/performance.md, "Requests without boto3").

The default embedder (EMBEDDING_PROVIDER=bedrock, retrieval/embedders/bedrock.py) makes one call:
`client.invoke_model(modelId=..., body=..., contentType=..., accept=...)`. Importing boto3 and making
its bedrock-runtime client for it was ~0.25 s of CPU of a cold instance's first turn, and each call
~3 ms of client CPU. This client sends what boto3's would — POST `/model/{modelId}/invoke` with the
body as given, its Content-Type and Accept, signed with SigV4 for `bedrock` — and returns what boto3's
returns: the model's answer as `body` (read it with `.read()`), its `contentType`, `ResponseMetadata`.
Its endpoint, retries and errors are aws_wire.py's, as the JSON-protocol clients' (aws_json.py).
"""

from __future__ import annotations

import io
from typing import Any
from urllib.parse import quote, urlsplit

from rag_orchestrator.aws_sigv4 import Credentials, Signer
from rag_orchestrator.aws_wire import endpoint, exchange, response_metadata
from rag_orchestrator.http_pool import Request, Timeout, wire_for

SIGNING_NAME = "bedrock"  # bedrock-runtime's requests are signed for `bedrock`, as botocore's model says
JSON = "application/json"


class BedrockRuntime:
    """The bedrock-runtime client's `invoke_model`, over pooled connections."""

    def __init__(
        self,
        credentials: Credentials,
        region: str,
        *,
        connect_timeout: float = 3,
        read_timeout: float = 10,
        max_attempts: int = 5,
    ) -> None:
        self.url = endpoint("bedrock-runtime", "BEDROCK_RUNTIME", region)
        self.max_attempts = max_attempts
        self._signer = Signer(credentials, region, SIGNING_NAME)
        self._timeout = Timeout(connect=connect_timeout, read=read_timeout)
        parts = urlsplit(self.url)
        self._origin, self._root = f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")
        self._wire = wire_for(self.url, "", {})  # TLS with the process's one context (tls.py)

    def invoke_model(
        self, *, modelId: str, body: bytes | str, contentType: str = JSON, accept: str = JSON
    ) -> dict[str, Any]:
        """The model's answer to `body`; botocore's ClientError (its code and message) when Bedrock
        refuses, its connection errors when Bedrock cannot be reached."""
        data = body.encode() if isinstance(body, str) else bytes(body)
        path = f"{self._root}/model/{quote(modelId, safe='')}/invoke"  # a model id's ':' sent as %3A
        url, headers = self._origin + path, {"Content-Type": contentType, "Accept": accept}

        def send() -> Any:
            signed = self._signer.headers("POST", url, headers, data)
            return self._wire.send(Request("POST", path, data, self._timeout, signed))

        response, attempt, error = exchange(send, "InvokeModel", self.url, self.max_attempts)
        if error is not None:
            raise error
        return {
            "ResponseMetadata": response_metadata(response, attempt),
            "contentType": response.headers.get("content-type", ""),
            "body": io.BytesIO(response.body),
        }

    def close(self) -> None:
        self._wire.close()
