"""Bedrock Runtime's InvokeModel without boto3 (aws_bedrock.py) against boto3's bedrock-runtime client:
on a scripted server, both send the same request (path, body, Content-Type, Accept), ours signed as
botocore's signer signs it, and both read the same answers and the same errors; throttling and 5xx are
retried, a refusal is not; the default embedder gets its vectors through it, and its failures as
before; the moto server takes its request as boto3's."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials as BotoCredentials
from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError

from rag_orchestrator import aws_wire
from rag_orchestrator.aws import AwsClients
from rag_orchestrator.aws_bedrock import BedrockRuntime
from rag_orchestrator.aws_wire import environment
from rag_orchestrator.config import load_settings
from rag_orchestrator.errors import EmbedderUnavailable
from rag_orchestrator.retrieval.embedders.bedrock import DEFAULT_MODEL, BedrockEmbedder
from tests.fakes.client_pair import client_pair
from tests.fakes.fake_titan import FakeTitan, fake_titan

pytestmark = pytest.mark.integration

TITAN = {"embedding": [0.6, -0.8, 0.0], "inputTextTokenCount": 3}
THROTTLED = (429, "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/", "slow down")


@pytest.fixture
def scripted(monkeypatch) -> Iterator[tuple[FakeTitan, BedrockRuntime, Any, list[float]]]:
    """The server, ours and boto3's clients on it (three attempts each), and ours's pauses."""
    with (
        fake_titan(TITAN["embedding"]) as server,
        client_pair(monkeypatch, server.url, "BEDROCK_RUNTIME", BedrockRuntime, "bedrock-runtime") as (
            ours,
            theirs,
            pauses,
        ),
    ):
        yield server, ours, theirs, pauses


def invoke(client: Any, text: str = "hello", model: str = DEFAULT_MODEL) -> dict[str, Any]:
    body = json.dumps({"inputText": text, "dimensions": 256, "normalize": True})
    return client.invoke_model(
        modelId=model, body=body, contentType="application/json", accept="application/json"
    )


def botocore_signature(path: str, headers: dict[str, str], body: bytes, url: str) -> str:
    """The Authorization botocore's signer gives the request as received, at its own X-Amz-Date."""
    found = environment()
    assert found is not None
    credentials, region = found
    signed = {k: v for k, v in headers.items() if k in headers["authorization"].split("SignedHeaders=")[1]}
    request = AWSRequest(method="POST", url=url + path, data=body, headers=signed)
    auth = SigV4Auth(
        BotoCredentials(credentials.access_key, credentials.secret_key, credentials.token), "bedrock", region
    )
    moment = datetime.strptime(headers["x-amz-date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    request.context["timestamp"] = moment.strftime("%Y%m%dT%H%M%SZ")
    canonical = auth.canonical_request(request)
    signature = auth.signature(auth.string_to_sign(request, canonical), request)
    return f"{auth.credential_scope(request)}, SignedHeaders={auth.signed_headers(auth.headers_to_sign(request))}, Signature={signature}"


def test_the_request_is_boto3s_and_signed_as_botocore_signs_it(scripted):
    server, ours, theirs, _ = scripted
    for model in (DEFAULT_MODEL, "arn:aws:bedrock:us-east-1::foundation-model/cohere.embed-v4:0"):
        answers = [invoke(client, "caf\u00e9 \u2603", model) for client in (theirs, ours)]
        (their_path, their_headers, their_body), (path, headers, body) = server.received[-2:]
        assert path == their_path and body == their_body
        assert path.startswith("/model/") and path.endswith("/invoke") and ":" not in path
        for name in ("content-type", "accept", "host", "x-amz-security-token"):
            assert headers.get(name) == their_headers.get(name), name
        url = server.url
        assert headers["authorization"].endswith(botocore_signature(path, headers, body, url))
        ours_read, theirs_read = (json.loads(answer["body"].read()) for answer in reversed(answers))
        assert ours_read == theirs_read == TITAN
        assert answers[1]["contentType"] == answers[0]["contentType"] == "application/json"
        assert answers[1]["ResponseMetadata"]["HTTPStatusCode"] == 200
        assert answers[1]["ResponseMetadata"]["RequestId"] == f"req-{len(server.received)}"


def test_throttling_and_5xx_are_retried_and_a_refusal_is_not(scripted):
    server, ours, theirs, pauses = scripted
    server.script = [THROTTLED, (503, "ServiceUnavailableException", "busy"), (200, None, TITAN)]
    answer = invoke(ours)
    assert json.loads(answer["body"].read()) == TITAN and answer["ResponseMetadata"]["RetryAttempts"] == 2
    assert len(server.received) == 3 and len(pauses) == 2 and 0 <= pauses[0] <= 1 and 0 <= pauses[1] <= 2

    # A model still loading: bedrock-runtime's model calls it retryable, and botocore retries it.
    not_ready = (
        429,
        "ModelNotReadyException:http://internal.amazon.com/coral/com.amazon.bedrock/",
        "loading",
    )
    for client in (theirs, ours):
        server.script, sent = [not_ready, (200, None, TITAN)], len(server.received)
        assert json.loads(invoke(client)["body"].read()) == TITAN
        assert len(server.received) == sent + 2
    del pauses[:]

    refusals = [(400, "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/", "bad")]
    errors = []
    for client in (theirs, ours):
        server.script = list(refusals)
        with pytest.raises(ClientError) as refused:
            invoke(client)
        errors.append(refused.value)
    assert (
        errors[1].response["Error"]
        == errors[0].response["Error"]
        == {"Code": "ValidationException", "Message": "bad"}
    )
    assert str(errors[1]) == str(errors[0]) and pauses == []  # not retried

    server.script = [THROTTLED] * 3
    with pytest.raises(ClientError) as throttled:
        invoke(ours)
    assert throttled.value.response["Error"]["Code"] == "ThrottlingException"
    assert throttled.value.response["ResponseMetadata"]["RetryAttempts"] == 2 and server.script == []


def test_the_default_embedder_gets_its_vectors_and_its_failures_through_it(scripted, monkeypatch):
    server, _, _, _ = scripted
    settings = load_settings(
        conversation_storage="memory", embedding_provider="bedrock", embedding_dimensions=256
    )
    clients = AwsClients()
    embedder = BedrockEmbedder.from_settings(settings, clients)
    assert isinstance(
        clients.client(
            "bedrock-runtime",
            read_timeout=settings.embedding_timeout_seconds,
            max_attempts=settings.embedding_max_retries + 1,
        ),
        BedrockRuntime,
    )
    assert embedder.embed_batch(["one", "two"]) == [TITAN["embedding"]] * 2
    sent = sorted((json.loads(body) for _, _, body in server.received[-2:]), key=lambda b: b["inputText"])
    assert sent == [{"inputText": text, "dimensions": 256, "normalize": True} for text in ("one", "two")]

    server.script = [THROTTLED] * (settings.embedding_max_retries + 1)
    with pytest.raises(EmbedderUnavailable, match="Bedrock throttled the embedding request"):
        embedder.embed("x")
    server.script = [(403, "AccessDeniedException", "no access to model")]
    with pytest.raises(EmbedderUnavailable, match="Bedrock refused the embedding request") as refused:
        embedder.embed("x")
    assert not refused.value.retryable and "no access" not in refused.value.public_message
    server.script = [(200, None, {"unexpected": True})]
    with pytest.raises(EmbedderUnavailable, match="unreadable"):
        embedder.embed("x")


def test_nothing_listening_and_a_silent_server_are_botocores_errors(monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "http://127.0.0.1:9")
    monkeypatch.setattr(aws_wire.time, "sleep", lambda _: None)
    found = environment()
    assert found is not None
    with pytest.raises(EndpointConnectionError):
        invoke(BedrockRuntime(*found, max_attempts=2))
    embedder = BedrockEmbedder(BedrockRuntime(*found, max_attempts=1))
    with pytest.raises(EmbedderUnavailable, match="Bedrock could not be reached"):
        embedder.embed("x")

    silent = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Silent)
    threading.Thread(target=silent.serve_forever, daemon=True).start()
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", f"http://127.0.0.1:{silent.server_address[1]}")
    try:
        with pytest.raises(ReadTimeoutError):
            invoke(BedrockRuntime(*found, read_timeout=0.3, max_attempts=1))
    finally:
        silent.shutdown()


class Silent(http.server.BaseHTTPRequestHandler):
    """Reads the request and answers nothing for a while."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        threading.Event().wait(1.5)

    def log_message(self, *args: Any) -> None:
        pass


def test_the_moto_server_takes_its_request_as_boto3s(aws_stack):
    found = environment()
    assert found is not None
    ours = BedrockRuntime(*found)
    theirs = boto3.client("bedrock-runtime", endpoint_url=aws_stack["endpoint"])
    answers = [invoke(client) for client in (theirs, ours)]
    assert [json.loads(a["body"].read()) for a in answers] == [{}, {}]  # what moto's InvokeModel answers
    assert [a["ResponseMetadata"]["HTTPStatusCode"] for a in answers] == [200, 200]
