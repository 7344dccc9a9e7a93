"""What conversation memory costs a streamed turn: chat-stream processes with MEMORY_ENABLED on and off.

Two warm chat-stream processes take turns in alternation (bench/alternation.py); each turn is a new
conversation of the same caller, so the memory holds two more fragments each time (said, answered).
"Request sent -> first ResponseChunk" includes the initial search, which with memory queries the
knowledge base, the caller's attachment segments and turn fragments at once; "Completed -> end of
response" is the after-turn work (embed and upsert the turn's two fragments, one batch).

Then the first turn of fresh processes, whose first indexing also gets or creates the collection over a
new connection; and, in this process, the two parts of the after-turn work: embedding the fragments (the
hashing embedder here; a model embedder adds its round trip) and the upsert over Chroma's REST API.
"""

from __future__ import annotations

import time
from typing import Any

from bench import layout as lambda_layout
from bench import stack as local
from bench.alternation import alternate, ms, report
from bench.report import Section

QUESTION = "How do I run the test suite?"
MODES = {"on": {"MEMORY_ENABLED": "true"}, "off": {"MEMORY_ENABLED": "false"}}


def _turn(
    stack: local.LocalStack, process: local.ChatStreamProcess, token: str
) -> tuple[local.StreamedTurn, float]:
    """The turn, and when the fake LLM sent its answer's first content delta."""
    sent_before = len(stack.llm.content_sent_at)
    turn = local.stream_turn(process.port, stack.conversation(), token, QUESTION)
    if turn.status != 200 or turn.events[-1:] != ["Completed"] or turn.first_chunk_at is None:
        raise RuntimeError(f"turn failed: {turn.status} {turn.events}\n{process.output()}")
    if len(stack.llm.content_sent_at) != sent_before + 1:
        raise RuntimeError("the fake LLM did not record its first content chunk")
    return turn, stack.llm.content_sent_at[sent_before]


def run(quick: bool = False) -> Section:
    from tests.fakes.llm_script import text_reply

    section = Section("memory", packages=["chromadb", "httpx", "uvicorn"])
    runs, warmup, fresh = (20, 5, 1) if quick else (150, 15, 3)
    layout = lambda_layout.prepare()
    stack = local.shared()
    stack.llm.default = text_reply("Run make test [source:guide#0].", chunks=5)
    token = stack.token()
    envs = {mode: stack.stream_env(layout) | extra for mode, extra in MODES.items()}
    samples, _ = alternate(layout, envs, lambda mode, process: _turn(stack, process, token), runs, warmup)
    report(section, "memory", samples, "warm")
    for mode, env in envs.items():
        section.add(
            f"memory {mode}: Completed -> end of response, first turn of a fresh process",
            "ms",
            [_first_turn_after(stack, layout, env, token) for _ in range(fresh)],
        )
    embed, upsert = _parts(stack, runs)
    section.add("in process: embed one turn's fragments (hashing embedder)", "ms", embed)
    section.add("in process: upsert it (REST API -> Chroma server)", "ms", upsert)
    section.details["fragments indexed"] = _fragments(stack)
    return section


def _parts(stack: local.LocalStack, runs: int) -> tuple[list[float], list[float]]:
    from rag_orchestrator.domain.base import utcnow
    from rag_orchestrator.retrieval.embedders import create_embedder
    from rag_orchestrator.retrieval.fragments import conversation_fragments, create_fragment_index

    settings = stack.settings()
    index = create_fragment_index(settings, create_embedder(settings))
    assert index.embedder is not None
    embed: list[float] = []
    upsert: list[float] = []
    for n in range(runs + 5):
        fragments = conversation_fragments(
            conversation_id=f"bench-parts-{n}",
            caller_id="bench-parts",
            message_id=f"m{n}",
            question=QUESTION,
            answer="Run make test.",
            created_at=utcnow(),
        )
        started = time.perf_counter()
        vectors = index.embedder.embed_batch([f.text for f in fragments])  # one batch, as a turn does
        embedded = time.perf_counter()
        index.store.upsert([f.chunk() for f in fragments], vectors)
        if n >= 5:
            embed.append((embedded - started) * 1000)
            upsert.append((time.perf_counter() - embedded) * 1000)
    return embed, upsert


def _first_turn_after(stack: local.LocalStack, layout: Any, env: dict[str, str], token: str) -> float:
    process = local.ChatStreamProcess(layout, env)
    try:
        process.wait_listening()
        turn, _ = _turn(stack, process, token)
    finally:
        process.stop()
    return ms(turn.ended_at, turn.completed_at)


def _fragments(stack: local.LocalStack) -> int:
    from rag_orchestrator.retrieval.embedders import create_embedder
    from rag_orchestrator.retrieval.fragments import create_fragment_index

    settings = stack.settings()
    index = create_fragment_index(settings, create_embedder(settings))
    return index.store.count()
