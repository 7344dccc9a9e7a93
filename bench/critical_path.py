"""The pre-model critical path: request → first byte of the model request, with network time injected.

The real Orchestrator in this process (DynamoDB store, rag_search over Chroma, the 30-tool catalogue
with tool selection, an OpenAI-compatible embedder) talks to the moto server, Chroma and a fake
embeddings server through loopback proxies (bench/delay_proxy.py, a process of its own) that hold each
request for a set delay: 10 ms DynamoDB, 60 ms embedding, 30 ms Chroma. Measured per turn: `begin()`
called → the fake LLM reads the first line of the chat request (`FakeLLM.request_at`), turns with the
delays alternating with turns through the same proxies without them (the work itself). The longest chain of work that
depends on each other is the embedding then the Chroma query (90 ms; the claim then the window read
is 20 ms beside it): goal, the delayed time within 10 % of that chain plus the no-delay time (the
servers' own work, which the delays add to). Done one after the other, the same turn pays all five
waits: 10 + 60 + 10 + 60 + 30 = 170 ms.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
import uuid
from contextlib import ExitStack
from typing import Any

from bench.report import ROOT, Section

DELAYS_MS = {"dynamodb": 10, "embedder": 60, "chroma": 30}
CHAIN_MS = DELAYS_MS["embedder"] + DELAYS_MS["chroma"]
CATALOG = ROOT / "tests" / "data" / "tool_catalog_30.yaml"
MESSAGE = "How do I run the test suite?"


class Proxies:
    """One delay_proxy process: a listener per target port, each with its delay, switched on and off."""

    def __init__(self, targets: list[tuple[int, float]]) -> None:
        specs = [f"{port}:{delay}" for port, delay in targets]
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.delay_proxy", *specs], cwd=ROOT, stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        self.control, *self.ports = [
            int(self.process.stdout.readline().split()[1]) for _ in range(len(specs) + 1)
        ]

    def delays(self, on: bool) -> None:
        with socket.create_connection(("127.0.0.1", self.control)) as control:
            control.sendall(b"on" if on else b"off")
            control.recv(16)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/")[0])


def _settings(stack: Any, embeddings_url: str, chroma_url: str, collection: str) -> Any:
    return stack.settings(
        **stack.llm.settings_for("openai_compatible"),
        chroma_url=chroma_url,
        chroma_collection=collection,
        memory_enabled=False,  # a turn with memory queries its fragments beside the knowledge base
        embedding_provider="openai_compatible",
        embedding_base_url=embeddings_url,
        embedding_model="bench-embedder",
        embedding_dimensions=16,
        tool_catalog_path=str(CATALOG),
    )


async def _turns(settings: Any, llm: Any, proxies: Proxies, count: int) -> dict[bool, list[float]]:
    """Milliseconds from begin() to the model request's first line, by delays on/off, turns alternating."""
    from rag_orchestrator.api.deps import Services
    from rag_orchestrator.domain.callers import Caller
    from rag_orchestrator.domain.conversations import Conversation
    from rag_orchestrator.loop.request import TurnRequest

    services = Services(settings)
    orchestrator, caller = services.orchestrator, Caller("bench-user", ("user",))
    samples: dict[bool, list[float]] = {False: [], True: []}
    for n in range(2 * (count + 1)):
        delayed = n % 2 == 1
        proxies.delays(False)
        created = await services.store.create(Conversation(caller_id=caller.caller_id))
        request = TurnRequest(conversation_id=created.conversation_id, caller=caller, message=MESSAGE)
        proxies.delays(delayed)
        llm.request_at.clear()
        started = time.monotonic()
        turn = await orchestrator.begin(request)
        events = [event.type async for event in turn.events()]
        if events[-1] != "Completed" or not llm.request_at:
            raise RuntimeError(f"the turn did not reach the model: {events}")
        samples[delayed].append((llm.request_at[0] - started) * 1000)
    await services.strategy.aclose()
    return {delayed: values[1:] for delayed, values in samples.items()}  # the first of each warms up


def run(quick: bool = False) -> Section:
    from bench.stack import GUIDE, shared
    from rag_orchestrator.api.deps import process_aws
    from rag_orchestrator.observability import logger
    from rag_orchestrator.retrieval.ingestion import ingest_documents
    from rag_orchestrator.retrieval.knowledge_base import create_knowledge_base
    from tests.fakes.fake_embeddings import serve_fake_embeddings
    from tests.fakes.llm_script import text_reply

    aws = process_aws()

    section = Section("critical_path", packages=["boto3", "httpx"])
    stack = shared()
    count = 5 if quick else 30
    endpoint = os.environ["AWS_ENDPOINT_URL"]
    os.environ.setdefault("TOOL_API_URL", "http://127.0.0.1:9")  # the catalogue's tools are not called
    os.environ.setdefault("TOOL_API_TOKEN", "bench")
    collection = f"bench-critical-{uuid.uuid4().hex[:8]}"
    level = logger.log_level
    with ExitStack() as cleanup:
        embeddings = cleanup.enter_context(serve_fake_embeddings())
        targets = [_port(endpoint), _port(embeddings.url), _port(stack.env["CHROMA_URL"])]
        delays = [DELAYS_MS["dynamodb"], DELAYS_MS["embedder"], DELAYS_MS["chroma"]]
        proxies = Proxies(list(zip(targets, delays, strict=True)))
        cleanup.callback(proxies.stop)
        cleanup.callback(aws.reset)
        cleanup.callback(os.environ.__setitem__, "AWS_ENDPOINT_URL", endpoint)
        cleanup.callback(logger.setLevel, level)
        logger.setLevel("WARNING")  # a line per search and turn otherwise
        stack.llm.default = text_reply("Run make test.")
        ingest_documents(
            [{"documentId": "guide", "title": "Guide", "text": GUIDE}],
            create_knowledge_base(_settings(stack, embeddings.url, stack.env["CHROMA_URL"], collection), aws),
        )
        moto, embedder, chroma = (f"http://127.0.0.1:{port}" for port in proxies.ports)
        os.environ["AWS_ENDPOINT_URL"] = moto
        aws.reset()
        settings = _settings(stack, embedder + "/v1", chroma, collection)
        samples = asyncio.run(_turns(settings, stack.llm, proxies, count))
        plain = section.add("begin() → model request, no delay", "ms", samples[False]).median
        delayed = section.add("begin() → model request, delayed", "ms", samples[True]).median
        bound = CHAIN_MS + plain  # the chain's network time plus the work itself
        figure = section.add(f"delayed ÷ ({CHAIN_MS} ms chain + the no-delay time)", "ratio", delayed / bound)
        figure.goal, figure.met = "<= 1.10", delayed <= 1.1 * bound
    section.details["delays_ms"] = DELAYS_MS
    section.details["chain"] = (
        f"embedding ({DELAYS_MS['embedder']} ms) then the Chroma query ({DELAYS_MS['chroma']} ms); "
        f"beside it the claim then the window read ({2 * DELAYS_MS['dynamodb']} ms)"
    )
    return section
