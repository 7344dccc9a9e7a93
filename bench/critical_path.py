"""The pre-model critical path: request → first byte of the model request, with network time injected.

The real Orchestrator in this process (DynamoDB store, rag_search over Chroma, the 30-tool catalogue
with tool selection, an OpenAI-compatible embedder) talks to the moto server, Chroma and a fake
embeddings server through loopback proxies (bench/delay_proxy.py, a process of its own) that hold each
request for a set delay: 10 ms DynamoDB, 60 ms embedding, 30 ms Chroma. Measured per turn: `begin()`
called → the fake LLM reads the first line of the chat request (`FakeLLM.request_at`). Once with the
delays and once through the same proxies with none (the work itself). The longest chain of work that
depends on each other is the embedding then the Chroma query (90 ms; the claim then the window read
is 20 ms beside it): goal, within 10 % of that chain plus the work itself.
"""

from __future__ import annotations

import asyncio
import os
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
    """One delay_proxy process: a listener per target port, each with its delay."""

    def __init__(self, targets: list[tuple[int, float]]) -> None:
        specs = [f"{port}:{delay}" for port, delay in targets]
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.delay_proxy", *specs], cwd=ROOT, stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        self.ports = [int(self.process.stdout.readline().split()[1]) for _ in specs]

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


async def _turns(settings: Any, llm: Any, count: int) -> list[float]:
    """Milliseconds from begin() to the model request's first line, for `count` turns after one warm-up."""
    from rag_orchestrator.api.deps import Services
    from rag_orchestrator.domain.callers import Caller
    from rag_orchestrator.domain.conversations import Conversation
    from rag_orchestrator.loop.ports import TurnRequest

    services = Services(settings)
    orchestrator, caller = services.orchestrator, Caller("bench-user", ("user",))
    samples = []
    for _ in range(count + 1):
        created = await services.store.create(Conversation(caller_id=caller.caller_id))
        request = TurnRequest(conversation_id=created.conversation_id, caller=caller, message=MESSAGE)
        llm.request_at.clear()
        started = time.monotonic()
        turn = await orchestrator.begin(request)
        events = [event.type async for event in turn.events()]
        if events[-1] != "Completed" or not llm.request_at:
            raise RuntimeError(f"the turn did not reach the model: {events}")
        samples.append((llm.request_at[0] - started) * 1000)
    await services.strategy.aclose()
    return samples[1:]


def run(quick: bool = False) -> Section:
    from bench.stack import GUIDE, shared
    from rag_orchestrator import aws
    from rag_orchestrator.observability import logger
    from rag_orchestrator.retrieval.ingestion import ingest_documents
    from tests.fakes.fake_embeddings import serve_fake_embeddings
    from tests.fakes.llm_script import text_reply

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
        modes = {
            "no delay": Proxies([(t, 0) for t in targets]),
            "delayed": Proxies(list(zip(targets, delays, strict=True))),
        }
        for proxies in modes.values():
            cleanup.callback(proxies.stop)
        cleanup.callback(aws.reset)
        cleanup.callback(os.environ.__setitem__, "AWS_ENDPOINT_URL", endpoint)
        cleanup.callback(logger.setLevel, level)
        logger.setLevel("WARNING")  # a line per search and turn otherwise
        stack.llm.default = text_reply("Run make test.")
        ingest_documents(
            [{"documentId": "guide", "title": "Guide", "text": GUIDE}],
            _settings(stack, embeddings.url, stack.env["CHROMA_URL"], collection),
        )
        medians = {}
        for mode, proxies in modes.items():
            moto, embedder, chroma = (f"http://127.0.0.1:{port}" for port in proxies.ports)
            os.environ["AWS_ENDPOINT_URL"] = moto
            aws.reset()
            settings = _settings(stack, embedder + "/v1", chroma, collection)
            samples = asyncio.run(_turns(settings, stack.llm, count))
            medians[mode] = section.add(f"begin() → model request, {mode}", "ms", samples).median
        goal = 1.1 * (CHAIN_MS + medians["no delay"])
        figure = section.add(
            "delayed, above the work itself (no delay)", "ms", [medians["delayed"] - medians["no delay"]]
        )
        figure.goal = f"<= {1.1 * CHAIN_MS:.0f} ms (within 10 % of the {CHAIN_MS} ms chain)"
        figure.met = medians["delayed"] <= goal
    section.details["delays_ms"] = DELAYS_MS
    section.details["chain"] = (
        f"embedding ({DELAYS_MS['embedder']} ms) then the Chroma query ({DELAYS_MS['chroma']} ms); "
        f"beside it the claim then the window read ({2 * DELAYS_MS['dynamodb']} ms)"
    )
    return section
