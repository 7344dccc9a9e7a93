"""What conversation memory costs a streamed turn: chat-stream processes with MEMORY_ENABLED on and off.

Two warm chat-stream processes (run as bench/ttft.py runs one) take turns in alternation, so load on
the machine hits both alike; each turn is a new conversation of the same caller, so the memory holds
one more fragment each time. Per turn, with the clocks of bench/ttft.py:

- added first-token delay: the fake LLM's first content delta -> the client's first ResponseChunk;
- request sent -> first ResponseChunk: includes the initial search, which with memory queries the
  knowledge base and the caller's fragments at once;
- Completed received -> end of the response: the after-turn work (embed and upsert the turn's
  fragment), which the client does not wait for and Lambda bills.

Then the first turn of fresh processes, whose first indexing also imports chromadb and connects;
and, in this process, the two parts of the after-turn work: embedding the fragment (the hashing
embedder here; a model embedder adds its round trip) and the upsert through chromadb-client.
"""

from __future__ import annotations

import time
from typing import Any

from bench import layout as lambda_layout
from bench import stack as local
from bench.report import Section

QUESTION = "How do I run the test suite?"
MODES = {"on": {"MEMORY_ENABLED": "true"}, "off": {"MEMORY_ENABLED": "false"}}


def _turn(stack: local.LocalStack, process: local.ChatStreamProcess, token: str) -> local.StreamedTurn:
    sent_before = len(stack.llm.content_sent_at)
    turn = local.stream_turn(process.port, stack.conversation(), token, QUESTION)
    if turn.status != 200 or turn.events[-1:] != ["Completed"] or turn.first_chunk_at is None:
        raise RuntimeError(f"turn failed: {turn.status} {turn.events}\n{process.output()}")
    if len(stack.llm.content_sent_at) != sent_before + 1:
        raise RuntimeError("the fake LLM did not record its first content chunk")
    return turn


def _ms(later: float | None, earlier: float | None) -> float:
    assert later is not None and earlier is not None
    return (later - earlier) * 1000


def run(quick: bool = False) -> Section:
    from tests.fakes.llm_script import text_reply

    section = Section("memory", packages=["chromadb", "httpx", "uvicorn"])
    runs, warmup, fresh = (20, 5, 1) if quick else (150, 15, 3)
    layout = lambda_layout.prepare()
    stack = local.shared()
    stack.llm.default = text_reply("Run make test [source:guide#0].", chunks=5)
    token = stack.token()
    envs = {mode: stack.stream_env(layout) | extra for mode, extra in MODES.items()}
    samples: dict[str, dict[str, list[float]]] = {m: {"added": [], "first": [], "after": []} for m in MODES}
    processes = {mode: local.ChatStreamProcess(layout, env) for mode, env in envs.items()}
    try:
        for process in processes.values():
            process.wait_listening()
        for n in range(warmup + runs):
            for mode, process in processes.items():
                turn = _turn(stack, process, token)
                if n >= warmup:
                    taken = samples[mode]
                    taken["added"].append(_ms(turn.first_chunk_at, stack.llm.content_sent_at[-1]))
                    taken["first"].append(_ms(turn.first_chunk_at, turn.sent_at))
                    taken["after"].append(_ms(turn.ended_at, turn.completed_at))
    finally:
        for process in processes.values():
            process.stop()
    for mode, taken in samples.items():
        section.add(
            f"memory {mode}: added first-token delay, warm (fake LLM -> client)", "ms", taken["added"]
        )
        section.add(f"memory {mode}: request sent -> first ResponseChunk, warm", "ms", taken["first"])
        section.add(
            f"memory {mode}: Completed -> end of response (after-turn work), warm", "ms", taken["after"]
        )
    for mode, env in envs.items():
        section.add(
            f"memory {mode}: Completed -> end of response, first turn of a fresh process",
            "ms",
            [_first_turn_after(stack, layout, env, token) for _ in range(fresh)],
        )
    embed, upsert = _parts(stack, runs)
    section.add("in process: embed one turn's fragment (hashing embedder)", "ms", embed)
    section.add("in process: upsert it (chromadb-client -> Chroma server)", "ms", upsert)
    section.details["fragments indexed"] = _fragments(stack)
    return section


def _parts(stack: local.LocalStack, runs: int) -> tuple[list[float], list[float]]:
    from rag_orchestrator.domain.base import utcnow
    from rag_orchestrator.retrieval.fragments import conversation_fragment, get_fragment_index

    index = get_fragment_index(stack.settings())
    assert index.embedder is not None
    embed: list[float] = []
    upsert: list[float] = []
    for n in range(runs + 5):
        fragment = conversation_fragment(
            conversation_id=f"bench-parts-{n}",
            caller_id="bench-parts",
            message_id=f"m{n}",
            question=QUESTION,
            answer="Run make test.",
            created_at=utcnow(),
        )
        started = time.perf_counter()
        vectors = index.embedder.embed_batch([fragment.text])
        embedded = time.perf_counter()
        index.store.upsert([fragment.chunk()], vectors)
        if n >= 5:
            embed.append((embedded - started) * 1000)
            upsert.append((time.perf_counter() - embedded) * 1000)
    return embed, upsert


def _first_turn_after(stack: local.LocalStack, layout: Any, env: dict[str, str], token: str) -> float:
    process = local.ChatStreamProcess(layout, env)
    try:
        process.wait_listening()
        turn = _turn(stack, process, token)
    finally:
        process.stop()
    return _ms(turn.ended_at, turn.completed_at)


def _fragments(stack: local.LocalStack) -> int:
    from rag_orchestrator.retrieval.fragments import get_fragment_index

    return get_fragment_index(stack.settings()).store.count()
