"""Streaming cost: CPU time per streamed token, for answers of 100, 1000 and 5000 tokens.

Two paths, both in this process with in-memory storage and no tools:
- scripted: the scripted strategy yields one ContentChunk per token; the loop turns each into a
  ResponseChunk, the turn's task (loop/turn_stream.py) numbers it, hands it over and logs it (the
  memory log: the DynamoDB one writes from worker threads), and api/chat.py's `_sse` encodes it;
- provider: the same through the OpenAI-compatible strategy reading the fake LLM's SSE stream on
  loopback over httpx (one delta per token, one socket read each), so the HTTP client and the
  provider's parsing are counted too. The fake LLM serves from a process of its own
  (bench/llm_process.py): excluded from the figure, as a remote model is. Goal: <= 60 µs per token at
  1,000 tokens (httpx's reader is ~30 µs of it: bench/README.md, "One model transport").
- provider, fake LLM in a thread of this process: how it was measured until issue 22; the server's
  GIL hand-offs with the client add to the client thread's CPU time.
CPU is the main thread's (time.thread_time). Then the model client alone: the connections 5 calls
open (1 while each body is read to its end after `[DONE]`), and `stream()` -> its first content delta
on a warm client.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from bench.report import Section

LENGTHS = (100, 1000, 5000)
GOAL_TOKENS, GOAL_US = 1000, 60.0
PAYLOAD = {"model": "fake-model", "messages": [{"role": "user", "content": "Tell me"}], "stream": True}


def _orchestrator(strategy: Any) -> Any:
    from tests.fakes.scripted import scripted_orchestrator

    return scripted_orchestrator(strategy)


async def _turn_cpu(orchestrator: Any, expect_chunks: int) -> float:
    """Main-thread CPU seconds of one streamed turn, from begin() to the last SSE bytes and log write."""
    from rag_orchestrator.api.chat import _sse
    from rag_orchestrator.api.deps import stream_config
    from rag_orchestrator.config import load_settings
    from rag_orchestrator.domain.callers import Caller
    from rag_orchestrator.domain.conversations import Conversation
    from rag_orchestrator.loop.control import RunningTurns
    from rag_orchestrator.loop.request import TurnRequest
    from rag_orchestrator.loop.turn_stream import TurnStream
    from rag_orchestrator.stream_log.in_process import InProcessEventLog

    config = stream_config(load_settings(conversation_storage="memory"))  # scripted_orchestrator's defaults
    created = await orchestrator.deps.store.create(Conversation(caller_id="bench"))
    request = TurnRequest(conversation_id=created.conversation_id, caller=Caller("bench"), message="Tell me")
    started = time.thread_time()
    turn = await orchestrator.begin(request)
    stream = TurnStream(turn, log=InProcessEventLog(), running=RunningTurns(), config=config)
    stream.start()
    chunks = 0
    async for data in _sse(stream, time.perf_counter()):
        chunks += data.startswith(b"event: ResponseChunk")
    await stream.finished()
    elapsed = time.thread_time() - started
    if chunks != expect_chunks:
        raise RuntimeError(f"expected {expect_chunks} ResponseChunk events, got {chunks}")
    return elapsed


def _text(tokens: int) -> str:
    return "word " * tokens


def _chat_client(url: str) -> Any:
    from rag_orchestrator.providers.openai_compat import ChatClient, RetryPolicy

    return ChatClient(
        provider="bench",
        base_url=url,
        api_key="bench-key",
        timeout_seconds=30,
        idle_timeout_seconds=30,
        retry=RetryPolicy(max_retries=0),
    )


async def _first_delta(client: Any) -> float:
    """Seconds from `stream()` to its first content delta; the rest of the answer is read too."""
    started = time.perf_counter()
    first = None
    async for delta in client.stream(PAYLOAD):
        if first is None and delta.content:
            first = time.perf_counter() - started
    if first is None:
        raise RuntimeError("the answer had no content")
    return first


async def _model_client(section: Section, runs: int) -> None:
    """Connections per 5 calls (fake LLM in this process: it counts them), then the first delta, warm
    (fake LLM in its own process)."""
    from bench.llm_process import LLMProcess
    from tests.fakes.fake_llm import FakeLLM
    from tests.fakes.llm_script import text_reply

    with FakeLLM() as llm:
        llm.default = text_reply(_text(20), chunks=20)
        client = _chat_client(llm.url)
        for _ in range(5):
            await _first_delta(client)
        await client.aclose()
        section.add("model client: connections opened by 5 calls", "connections", float(llm.connections))
    with LLMProcess(5) as server:
        client = _chat_client(server.url)
        samples = [await _first_delta(client) * 1000 for _ in range(runs + 10)][10:]
        await client.aclose()
    section.add("model client: stream() -> first content delta, warm (5-token answers)", "ms", samples)


def run(quick: bool = False) -> Section:
    from bench.llm_process import LLMProcess
    from rag_orchestrator.providers.strategies import create_strategy
    from tests.fakes.fake_llm import FakeLLM
    from tests.fakes.llm_script import text_reply
    from tests.fakes.scripted import ScriptedStrategy, answer

    section = Section("streaming", packages=["pydantic", "pydantic-core", "httpx", "httpcore", "h11"])
    repeats = 3 if quick else 15
    per_token: dict[str, dict[int, float]] = {"scripted": {}, "provider": {}}

    async def main() -> None:
        for tokens in LENGTHS:
            text = _text(tokens)
            samples = []
            for _ in range(repeats + 1):
                strategy = ScriptedStrategy([answer(text, chunks=tokens)])
                samples.append(await _turn_cpu(_orchestrator(strategy), tokens) / tokens * 1e6)
            figure = section.add(f"scripted, {tokens} tokens: loop + SSE encoding", "µs/token", samples[1:])
            per_token["scripted"][tokens] = figure.median

        from rag_orchestrator.config import load_settings

        for tokens in LENGTHS:
            with LLMProcess(tokens) as server:
                settings = load_settings(
                    **server.settings_for("openai_compatible"), auth_mode="dev", conversation_storage="memory"
                )
                strategy = create_strategy(settings)
                orchestrator = _orchestrator(strategy)
                samples = [await _turn_cpu(orchestrator, tokens) / tokens * 1e6 for _ in range(repeats + 1)]
                await strategy.aclose()
            figure = section.add(
                f"provider, {tokens} tokens: + HTTP client and OpenAI-compatible SSE parsing",
                "µs/token",
                samples[1:],
            )
            if tokens == GOAL_TOKENS:
                figure.goal, figure.met = f"<= {GOAL_US:g} µs/token median", figure.median <= GOAL_US
            per_token["provider"][tokens] = figure.median

        with FakeLLM() as llm:
            llm.default = text_reply(_text(GOAL_TOKENS), chunks=GOAL_TOKENS)
            settings = load_settings(
                **llm.settings_for("openai_compatible"), auth_mode="dev", conversation_storage="memory"
            )
            strategy = create_strategy(settings)
            orchestrator = _orchestrator(strategy)
            samples = [
                await _turn_cpu(orchestrator, GOAL_TOKENS) / GOAL_TOKENS * 1e6 for _ in range(repeats + 1)
            ]
            await strategy.aclose()
        section.add(
            f"provider, {GOAL_TOKENS} tokens, fake LLM in a thread of this process (the old method)",
            "µs/token",
            samples[1:],
        )
        await _model_client(section, 20 if quick else 200)

    asyncio.run(main())
    first, last = LENGTHS[0], LENGTHS[-1]
    section.details["growth"] = {
        path: f"per-token CPU at {last} tokens is {values[last] / values[first]:.2f}x that at {first}; "
        f"marginal cost {(values[last] * last - values[first] * first) / (last - first):.1f} µs/token"
        for path, values in per_token.items()
    }
    return section
