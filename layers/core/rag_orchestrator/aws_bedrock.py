"""Bedrock Runtime's InvokeModel without boto3 (docs/performance.md, "Requests without boto3").

The default embedder (EMBEDDING_PROVIDER=bedrock, retrieval/embedders/bedrock.py) makes one call:
`client.invoke_model(modelId=..., body=..., contentType=..., accept=...)`. Importing boto3 and making
its bedrock-runtime client for it was ~0.25 s of CPU of a cold instance's first turn, and each call
~3 ms of client CPU. This client sends what boto3's would — POST `/model/{modelId}/invoke` with the
body as given, its Content-Type and Accept, signed with SigV4 for `bedrock` — and returns the parts of
boto3's answer a caller reads: the model's answer as `body` (`.read()` it), its `contentType`,
`ResponseMetadata` (not the performance-configuration and service-tier headers, which nothing reads).
Its endpoint, retries and errors are aws_wire.py's, as the JSON-protocol clients' (aws_json.py).
"""

from __future__ import annotations

import io
from functools import partial
from typing import Any
from urllib.parse import quote

from rag_orchestrator.aws_wire import SignedClient, exchange, response_metadata

JSON = "application/json"
# The errors bedrock-runtime's model marks retryable, which botocore's standard mode retries too.
MODELED_RETRYABLE = frozenset({"ModelNotReadyException"})


class BedrockRuntime(SignedClient):
    """The bedrock-runtime client's `invoke_model`, over pooled connections."""

    # Its endpoint's prefix and variable; its requests are signed for `bedrock`, as botocore's model says.
    names = ("bedrock-runtime", "BEDROCK_RUNTIME", "bedrock")

    def invoke_model(
        self, *, modelId: str, body: bytes | str, contentType: str = JSON, accept: str = JSON
    ) -> dict[str, Any]:
        """The model's answer to `body`; botocore's ClientError (its code and message) when Bedrock
        refuses, its connection errors when Bedrock cannot be reached."""
        data = body.encode() if isinstance(body, str) else bytes(body)
        path = f"/model/{quote(modelId, safe='')}/invoke"  # a model id's ':' sent as %3A
        headers = {"Content-Type": contentType, "Accept": accept}
        send = partial(self._post, path, headers, data)
        response, attempt, error = exchange(
            send, "InvokeModel", self.url, self.max_attempts, modeled=MODELED_RETRYABLE
        )
        if error is not None:
            raise error
        return {
            "ResponseMetadata": response_metadata(response, attempt),
            "contentType": response.headers.get("content-type", ""),
            "body": io.BytesIO(response.body),
        }
