"""The remote embedders' clients. Bedrock's embeddings without boto3 (aws_bedrock.py): the default
embedder (EMBEDDING_PROVIDER=bedrock, Titan Text Embeddings v2) against a fake Titan on loopback that
answers 1,024 values at once. And the OpenAI-compatible embedder on the pooled connections
(http_pool.py) against httpx's client, as before.

1. A cold instance's first embedding, in fresh processes (median of 5, CPU): from what a first turn has
   loaded by then (httpx, the settings, the DynamoDB client) to the first vector — the client's import,
   its making and the first call — through boto3's bedrock-runtime client as before, and through
   aws_bedrock.py now. Each child makes its embedder as the app does (`create_embedder`); the "before"
   child is told to give bedrock-runtime to boto3 (`AwsClients` did until now).
2. A warm embedding's client CPU, both ways, alternating in this process on the same server.
   And a batch of 30 texts (a tool index of 30 tools, embedded on a cold instance's first turn) with the
   fake Titan answering each request after 20 ms, as a round trip in a region: one request after the
   other as before, and `embed_batch`'s BATCH_REQUESTS at once now (wall time, alternating).
3. The OpenAI-compatible embedder's warm client CPU for one question and for a batch of 8 texts
   (tests/fakes/fake_embeddings.py, 16 values a text), through the pool and through httpx (its
   `transport` given httpx's own), alternating.
"""

from __future__ import annotations

import os
import statistics
import time
from unittest import mock

from bench.alternation import in_process
from bench.report import ROOT, Section, fresh_output
from tests.fakes.fake_titan import FakeTitan, fake_titan

VECTOR = [round(0.001 * i, 6) for i in range(1024)]  # what the fake Titan answers each text
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "bench",
    "AWS_SECRET_ACCESS_KEY": "bench",
    "AWS_DEFAULT_REGION": "us-east-1",
}
FIRST = """
import sys, time
import httpx, rag_orchestrator.config, rag_orchestrator.aws_json  # what a first turn has loaded by then
from rag_orchestrator import aws
from rag_orchestrator.config import load_settings
if sys.argv[1] == "boto3":
    aws.WITHOUT_BOTO3 = aws.JSON_SERVICES  # bedrock-runtime to boto3, as before
settings = load_settings(conversation_storage="memory", embedding_provider="bedrock")
started = time.process_time()
from rag_orchestrator.retrieval.embedders import create_embedder
vector = create_embedder(settings, aws.AwsClients()).embed("How do I run the tests?")
print(len(vector), time.process_time() - started)
"""


def _first_embedding(url: str, way: str) -> float:
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT / "layers" / "core"),
        "AUTH_MODE": "dev",
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": url,
        **CREDENTIALS,
    }
    printed = fresh_output(FIRST, way, env=env, what=f"the first embedding through {way}")
    dimensions, seconds = printed[-2:]
    assert dimensions == "1024", printed
    return float(seconds) * 1000


def run(quick: bool = False) -> Section:
    section = Section("remote_embedders", packages=["boto3", "botocore", "httpx"])
    rounds = 3 if quick else 5
    with fake_titan(VECTOR) as titan:
        url = titan.url
        first = {way: [_first_embedding(url, way) for _ in range(rounds)] for way in ("boto3", "aws_bedrock")}
        before = section.add(
            "a cold instance's first embedding: client import, making and first call, boto3 (before)",
            "ms",
            first["boto3"],
        )
        now = section.add(
            "a cold instance's first embedding: client import, making and first call, aws_bedrock (now)",
            "ms",
            first["aws_bedrock"],
        )
        now.note = (
            f"{statistics.median(first['aws_bedrock']) / before.median:.2f}x before" if before.median else ""
        )
        _warm(section, url, 30 if quick else 300)
        _batch(section, titan, 3 if quick else 10)
    _openai_compatible(section, 30 if quick else 300)
    return section


def _openai_compatible(section: Section, runs: int) -> None:
    import httpx

    from rag_orchestrator.retrieval.embedders.openai_compatible import OpenAICompatibleEmbedder
    from tests.fakes.fake_embeddings import serve_fake_embeddings

    with serve_fake_embeddings() as fake:
        pooled = OpenAICompatibleEmbedder(fake.url, "bench", batch_size=8)
        before = OpenAICompatibleEmbedder(fake.url, "bench", batch_size=8, transport=httpx.HTTPTransport())
        texts = [f"passage {i} of the bench's batch, about the tests" for i in range(8)]
        for name, call in (
            ("a question", lambda e, n: e.embed(f"question {n}")),
            ("a batch of 8", lambda e, n: e.embed_batch(texts)),
        ):
            labels = (
                f"OpenAI-compatible, {name}: client CPU, pooled http.client",
                f"OpenAI-compatible, {name}: client CPU, through httpx (as before)",
            )
            calls = tuple(lambda n, e=embedder, c=call: c(e, n) for embedder in (pooled, before))
            in_process(section, labels, calls, runs)  # type: ignore[arg-type]


def _warm(section: Section, url: str, runs: int) -> None:
    import boto3
    from botocore.config import Config

    from rag_orchestrator.aws_bedrock import BedrockRuntime
    from rag_orchestrator.aws_sigv4 import Credentials
    from rag_orchestrator.retrieval.embedders.bedrock import BedrockEmbedder

    with mock.patch.dict(os.environ, {"AWS_ENDPOINT_URL_BEDROCK_RUNTIME": url, **CREDENTIALS}):
        config = Config(connect_timeout=3, read_timeout=5, retries={"mode": "adaptive", "max_attempts": 3})
        theirs = boto3.session.Session().client("bedrock-runtime", config=config)
        ours = BedrockRuntime(Credentials("bench", "bench"), "us-east-1", read_timeout=5, max_attempts=3)
        embedders = (BedrockEmbedder(ours), BedrockEmbedder(theirs))
        calls = tuple(lambda n, e=embedder: e.embed(f"question {n}") for embedder in embedders)
        labels = (
            "a warm embedding's client CPU, aws_bedrock",
            "a warm embedding's client CPU, boto3 (before)",
        )
        in_process(section, labels, calls, runs)  # type: ignore[arg-type]
        ours.close()


def _batch(section: Section, titan: FakeTitan, runs: int) -> None:
    """30 texts, each answered after a 20 ms round trip: one request after the other (before) and
    `embed_batch` (now), alternating; wall time."""
    from rag_orchestrator.aws_bedrock import BedrockRuntime
    from rag_orchestrator.aws_sigv4 import Credentials
    from rag_orchestrator.retrieval.embedders.bedrock import BATCH_REQUESTS, BedrockEmbedder

    texts = [f"tool {i}: look something up about order {i}" for i in range(30)]
    walls: dict[str, list[float]] = {"before": [], "now": []}
    titan.delay = 0.02
    with mock.patch.dict(os.environ, {"AWS_ENDPOINT_URL_BEDROCK_RUNTIME": titan.url, **CREDENTIALS}):
        client = BedrockRuntime(Credentials("bench", "bench"), "us-east-1", read_timeout=5, max_attempts=3)
        embedder = BedrockEmbedder(client)
        ways = {
            "before": lambda: [embedder.embed(t) for t in texts],
            "now": lambda: embedder.embed_batch(texts),
        }
        for _ in range(runs):
            for way, embed in ways.items():
                started = time.perf_counter()
                assert len(embed()) == len(texts)
                walls[way].append((time.perf_counter() - started) * 1000)
        client.close()
    titan.delay = 0.0
    what = "a batch of 30 texts (a 30-tool index), 20 ms a round trip"
    before = section.add(f"{what}: one request after the other (before)", "ms", walls["before"])
    now = section.add(f"{what}: embed_batch, {BATCH_REQUESTS} at once (now)", "ms", walls["now"])
    now.note = f"{statistics.median(walls['now']) / before.median:.2f}x before"
