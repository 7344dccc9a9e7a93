"""Embedders: the offline hashing and wordllama ones, the OpenAI-compatible one against a fake server, Bedrock
via Stubber."""

from __future__ import annotations

import io
import json
import math
import threading
import time

import boto3
import httpx
import pytest
from botocore.exceptions import ClientError
from botocore.response import StreamingBody
from botocore.stub import Stubber

from rag_orchestrator.config import load_settings
from rag_orchestrator.errors import ConfigError, EmbedderUnavailable
from rag_orchestrator.retrieval.embedders import Embedder, create_embedder
from rag_orchestrator.retrieval.embedders.bedrock import BATCH_REQUESTS, DEFAULT_MODEL, BedrockEmbedder
from rag_orchestrator.retrieval.embedders.openai_compatible import OpenAICompatibleEmbedder
from rag_orchestrator.retrieval.embedders.wordllama import WordLlamaEmbedder
from rag_orchestrator.text.hashing import HashingEmbedder, tokenize
from tests.fakes.fake_embeddings import FakeEmbeddings, expected_vector, serve_fake_embeddings


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


# ---------------------------------------------------------------------------- hashing
def test_hashing_is_deterministic_normalized_and_sized():
    embedder = HashingEmbedder()
    first = embedder.embed("Chroma stores the chunks of every document.")
    again = HashingEmbedder().embed("Chroma stores the chunks of every document.")
    assert first == again
    assert len(first) == embedder.dimensions == 1024
    assert math.isclose(math.sqrt(sum(v * v for v in first)), 1.0, rel_tol=1e-9)
    assert len(HashingEmbedder(256).embed("x y z")) == 256


def test_hashing_is_stable_across_processes():
    # Python's hash() is salted per process; the embedder must not depend on it.
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    code = (
        "from rag_orchestrator.text.hashing import HashingEmbedder;"
        "print(HashingEmbedder(64).embed('stable vectors across restarts')[:8])"
    )
    runs = {
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
        ).stdout
        for _ in range(2)
    }
    assert len(runs) == 1
    assert runs.pop().strip() == str(HashingEmbedder(64).embed("stable vectors across restarts")[:8])


def test_hashing_puts_similar_texts_closer():
    embedder = HashingEmbedder()
    passage = embedder.embed("Tides are caused by the Moon's gravity pulling on the oceans twice a day.")
    related = embedder.embed("What makes ocean tides? The gravity of the moon?")
    unrelated = embedder.embed("How do I bake sourdough bread with a wild yeast starter?")
    assert cosine(passage, related) > cosine(passage, unrelated) + 0.1
    assert cosine(passage, passage) == pytest.approx(1.0)


def test_hashing_folds_accents_case_and_inflection():
    embedder = HashingEmbedder()
    assert embedder.embed("Configuración RÁPIDA") == embedder.embed("configuracion rapida")
    base = embedder.embed("configure the vector store")
    assert cosine(base, embedder.embed("configuring vector stores")) > cosine(
        base, embedder.embed("bake bread")
    )
    assert tokenize("The cat and the hat") == ["cat", "hat"]


def test_hashing_stems_words_so_a_plural_meets_its_singular():
    embedder = HashingEmbedder()
    question = embedder.embed("How do I run the tests?")
    assert cosine(question, embedder.embed("make test runs the suite")) > cosine(
        question, embedder.embed("make dev runs the stack")
    )
    assert embedder.name == "hashing-v2/1024"


def test_hashing_handles_empty_text():
    vector = HashingEmbedder(32).embed("  the of and  ")
    assert vector == [0.0] * 32


def test_factory_picks_by_provider():
    settings = load_settings(conversation_storage="memory")
    embedder = create_embedder(settings)
    assert isinstance(embedder, HashingEmbedder)
    assert isinstance(embedder, Embedder)
    other = create_embedder(load_settings(conversation_storage="memory", embedding_dimensions=128))
    assert other.dimensions == 128


def test_factory_builds_the_openai_compatible_embedder_without_calling_it():
    settings = load_settings(
        conversation_storage="memory",
        embedding_provider="openai_compatible",
        embedding_base_url="http://127.0.0.1:9/v1",
        embedding_model="nomic-embed-text",
    )
    embedder = create_embedder(settings)
    assert isinstance(embedder, OpenAICompatibleEmbedder)
    assert embedder.url == "http://127.0.0.1:9/v1/embeddings"
    assert embedder.name == "openai_compatible/nomic-embed-text"


# ---------------------------------------------------------------------------- wordllama
def test_wordllama_loads_its_packaged_weights_without_a_network():
    # The suite blocks every address beyond loopback: a download attempt would fail here.
    embedder = create_embedder(load_settings(conversation_storage="memory", embedding_provider="wordllama"))
    assert isinstance(embedder, WordLlamaEmbedder)
    assert embedder.name == "wordllama/l2_supercat/256" and embedder.dimensions == 256
    tides, moon, bread = embedder.embed_batch(
        ["What makes ocean tides?", "The Moon's gravity pulls on the oceans.", "Bake sourdough bread."]
    )
    assert len(tides) == 256
    assert math.isclose(math.sqrt(sum(v * v for v in tides)), 1.0, rel_tol=1e-5)
    assert cosine(tides, moon) > cosine(tides, bread)
    assert len(WordLlamaEmbedder(64).embed("short")) == 64


def test_wordllama_refuses_dimensions_it_does_not_have():
    with pytest.raises(ConfigError, match="EMBEDDING_DIMENSIONS must be one of"):
        WordLlamaEmbedder(1024)


# ---------------------------------------------------------------------------- openai-compatible
def make_openai(fake: FakeEmbeddings, **kwargs: object) -> OpenAICompatibleEmbedder:
    params = {"batch_size": 8, "max_retries": 3, "backoff_seconds": 0.001, "timeout": 5.0, **kwargs}
    return OpenAICompatibleEmbedder(fake.url, "fake-model", **params)  # type: ignore[arg-type]


def test_openai_compatible_orders_by_index_and_batches():
    texts = [f"text number {i} about topic {i % 3}" for i in range(19)]
    with serve_fake_embeddings(FakeEmbeddings(max_batch=8)) as fake:
        vectors = make_openai(fake).embed_batch(texts)
    assert vectors == [expected_vector(t) for t in texts]
    assert [len(r["body"]["input"]) for r in fake.requests] == [8, 8, 3]
    assert all(r["body"]["model"] == "fake-model" for r in fake.requests)


def test_openai_compatible_retries_429_then_succeeds_honouring_retry_after():
    slept: list[float] = []
    with serve_fake_embeddings(FakeEmbeddings(failures=[(429, {"retry-after": "0.01"}), (503, {})])) as fake:
        vector = make_openai(fake, sleep=slept.append).embed("hello")
    assert vector == expected_vector("hello")
    assert len(fake.requests) == 3
    assert slept[0] == pytest.approx(0.01)
    assert len(slept) == 2


def test_openai_compatible_retries_a_dropped_connection():
    with serve_fake_embeddings(FakeEmbeddings(drop_connection=1)) as fake:
        assert make_openai(fake).embed("again") == expected_vector("again")
    assert len(fake.requests) == 2


def test_a_server_that_accepts_and_stays_silent_is_asked_once_within_the_timeout():
    with (
        serve_fake_embeddings(FakeEmbeddings(stall_seconds=1.0)) as fake,
        pytest.raises(EmbedderUnavailable, match="did not answer in time") as raised,
    ):
        make_openai(fake, timeout=0.2, max_retries=3).embed("x")
    assert len(fake.requests) == 1  # retrying a hung server would only multiply the turn's wait
    assert raised.value.retryable and raised.value.status_code == 503


def test_openai_compatible_gives_up_after_max_retries():
    with (
        serve_fake_embeddings(FakeEmbeddings(failures=[(500, {})] * 5)) as fake,
        pytest.raises(EmbedderUnavailable, match="HTTP 500"),
    ):
        make_openai(fake, max_retries=2).embed("x")
    assert len(fake.requests) == 3


def test_openai_compatible_never_retries_a_4xx_and_never_shows_the_key(caplog):
    secret = "sk-test-0123456789abcdef"
    with (
        serve_fake_embeddings(FakeEmbeddings(api_key="the-right-key")) as fake,
        pytest.raises(EmbedderUnavailable) as raised,
    ):
        make_openai(fake, api_key=secret).embed("x")
    assert len(fake.requests) == 1
    assert "401" in raised.value.message
    assert secret not in raised.value.message
    [record] = [r for r in caplog.records if r.getMessage() == "embedding request refused"]
    logged = f"{record.getMessage()} {record.__dict__}"
    assert secret not in logged
    assert "[redacted]" in record.detail  # the server echoed the key; the log shows it redacted


def test_openai_compatible_sends_the_key_and_the_requested_dimensions():
    with serve_fake_embeddings(FakeEmbeddings(api_key="k-123")) as fake:
        embedder = make_openai(fake, api_key="k-123", dimensions=16)
        embedder.embed("x")
    assert fake.requests[0]["headers"]["authorization"] == "Bearer k-123"
    assert fake.requests[0]["body"]["dimensions"] == 16
    assert embedder.dimensions == 16


def test_openai_compatible_learns_its_dimensions():
    with serve_fake_embeddings() as fake:
        embedder = make_openai(fake)
        assert embedder.dimensions == 16
    assert "dimensions" not in fake.requests[0]["body"]


def test_openai_compatible_through_httpx_retries_a_failed_connect_and_never_a_silent_server():
    """With a transport (a proxy in the environment goes the same way: through httpx), the same
    decisions as on the pooled connections."""
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content)["input"][0])
        if len(seen) == 1:
            raise httpx.ConnectError("refused")
        if seen[-1] == "silent":
            raise httpx.ReadTimeout("silent")
        data = [{"index": 0, "embedding": [0.6, 0.8]}]
        return httpx.Response(200, json={"data": data})

    embedder = OpenAICompatibleEmbedder(
        "http://embeddings.test/v1", "m", backoff_seconds=0.001, transport=httpx.MockTransport(answer)
    )
    assert embedder.embed("x") == [0.6, 0.8] and seen == ["x", "x"]
    with pytest.raises(EmbedderUnavailable, match="did not answer in time"):
        embedder.embed("silent")
    assert seen == ["x", "x", "silent"]


def test_openai_compatible_reports_an_unreachable_server():
    embedder = OpenAICompatibleEmbedder(
        "http://127.0.0.1:9/v1", "m", max_retries=1, backoff_seconds=0.001, timeout=2.0
    )
    with pytest.raises(EmbedderUnavailable, match="unreachable"):
        embedder.embed("x")


# ---------------------------------------------------------------------------- bedrock
def bedrock_client():
    return boto3.session.Session().client("bedrock-runtime", region_name="us-east-1")


def titan_response(vector: list[float]) -> dict:
    payload = json.dumps({"embedding": vector, "inputTextTokenCount": 3}).encode()
    return {"body": StreamingBody(io.BytesIO(payload), len(payload)), "contentType": "application/json"}


def titan_request(text: str, dimensions: int) -> dict:
    return {
        "modelId": DEFAULT_MODEL,
        "body": json.dumps({"inputText": text, "dimensions": dimensions, "normalize": True}),
        "contentType": "application/json",
        "accept": "application/json",
    }


def test_bedrock_invokes_titan_v2_once_per_text():
    client = bedrock_client()
    embedder = BedrockEmbedder(client, dimensions=256)
    with Stubber(client) as stub:
        stub.add_response("invoke_model", titan_response([0.6, 0.8]), titan_request("first", 256))
        assert embedder.embed_batch(["first"]) == [[0.6, 0.8]]
        stub.assert_no_pending_responses()
    assert embedder.name == f"bedrock/{DEFAULT_MODEL}/256"


class SlowTitan:
    """A bedrock-runtime client answering each text with a vector of its own after a pause, counting the
    requests in flight at once."""

    def __init__(self, fail: str | None = None) -> None:
        self.fail, self.sent, self.flying, self.most = fail, [], 0, 0
        self.lock = threading.Lock()

    def invoke_model(self, *, modelId, body, contentType, accept):
        text = json.loads(body)["inputText"]
        with self.lock:
            self.sent.append(text)
            self.flying += 1
            self.most = max(self.most, self.flying)
        time.sleep(0.02)
        with self.lock:
            self.flying -= 1
        if text == self.fail:
            raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}}, "InvokeModel")
        return {"body": io.BytesIO(json.dumps({"embedding": [float(len(text)), 1.0]}).encode())}


def test_a_bedrock_batch_sends_its_texts_at_once_and_answers_in_order():
    texts = ["x" * n for n in range(1, 21)]
    client = SlowTitan()
    assert BedrockEmbedder(client).embed_batch(texts) == [[float(n), 1.0] for n in range(1, 21)]
    assert sorted(client.sent) == sorted(texts)  # each text once
    assert 1 < client.most <= BATCH_REQUESTS  # at once, never more than BATCH_REQUESTS

    failing = SlowTitan(fail="x" * 3)
    with pytest.raises(EmbedderUnavailable, match="refused"):
        BedrockEmbedder(failing).embed_batch(texts)
    assert failing.flying == 0  # every request ended before the failure was raised


def test_bedrock_maps_a_refusal_to_embedder_unavailable():
    client = bedrock_client()
    with Stubber(client) as stub:
        stub.add_client_error("invoke_model", "AccessDeniedException", "not allowed", 403)
        with pytest.raises(EmbedderUnavailable, match="Bedrock refused the embedding request") as raised:
            BedrockEmbedder(client).embed("x")
    assert not raised.value.retryable and "not allowed" not in raised.value.public_message


def test_bedrock_refuses_dimensions_titan_does_not_offer():
    with pytest.raises(ConfigError, match="EMBEDDING_DIMENSIONS"):
        BedrockEmbedder(bedrock_client(), dimensions=300)
