"""Time to first token added, warm: fake LLM's first content chunk written -> client has the first ResponseChunk.

One chat-stream process (uvicorn in the Lambda-like layout, as bench/cold.py starts it), warmed up,
then one turn after another on loopback, each in a new conversation. The fake LLM notes
time.monotonic() as it writes a reply's first content delta; the client (a plain socket) notes it
as the first `event: ResponseChunk` arrives. Both run in this process, so the clocks agree.

Beside it, turn for turn, the floor: a minimal FastAPI app streaming the same fake model through the
`openai` SDK (bench/floor_app.py, uvicorn as ours), what a hand-written service adds at the least.
"""

from __future__ import annotations

import os

from bench import layout as lambda_layout
from bench import stack as local
from bench.report import ROOT, Section

GOAL_MS = 5.0
QUESTION = "How do I run the test suite?"


def run(quick: bool = False) -> Section:
    from tests.fakes.llm_script import text_reply

    section = Section("ttft", packages=["uvicorn", "starlette", "httpx", "httpx-sse", "fastapi", "openai"])
    runs, warmup = (30, 5) if quick else (200, 20)
    layout = lambda_layout.prepare()
    stack = local.shared()
    stack.llm.default = text_reply("Run make test [source:guide#0].", chunks=5)
    process = local.ChatStreamProcess(layout, stack.stream_env(layout))
    floor_env = {"PATH": os.environ.get("PATH", ""), "FLOOR_MODEL_URL": stack.llm.url}
    floor = local.UvicornProcess("bench.floor_app:app", ROOT, floor_env)
    token = stack.token()
    added: list[float] = []
    request: list[float] = []
    whole: list[float] = []
    floor_added: list[float] = []
    try:
        process.wait_listening()
        floor.wait_listening()
        for n in range(warmup + runs):
            conversation = stack.conversation()
            ours = _timed(stack, process, conversation, token)
            floors = _timed(stack, floor, conversation, token)
            if n >= warmup:
                added.append((ours.first_chunk_at - stack.llm.content_sent_at[-2]) * 1000)
                request.append((ours.first_chunk_at - ours.sent_at) * 1000)
                whole.append((ours.ended_at - ours.first_chunk_at) * 1000)
                floor_added.append((floors.first_chunk_at - stack.llm.content_sent_at[-1]) * 1000)
    finally:
        process.stop()
        floor.stop()
    figure = section.add("added first-token delay, warm (fake LLM -> client)", "ms", added)
    figure.goal, figure.met = f"< {GOAL_MS} ms p95", (figure.p95 or figure.median) < GOAL_MS
    section.add(
        "request sent -> first ResponseChunk, warm (auth, DynamoDB, Chroma search, model call)", "ms", request
    )
    section.add("first ResponseChunk -> end of stream (5 chunks, Sources, Completed)", "ms", whole)
    floor_figure = section.add(
        "the floor: FastAPI + openai SDK, added first-token delay, warm", "ms", floor_added
    )
    floor_figure.note = "bench/floor_app.py, turn for turn beside ours"
    section.add("ours minus the floor (medians)", "ms", figure.median - floor_figure.median)
    return section


def _timed(
    stack: local.LocalStack, process: local.UvicornProcess, conversation: str, token: str
) -> local.StreamedTurn:
    """One streamed turn, checked whole, with the fake LLM's note of its first content delta."""
    sent_before = len(stack.llm.content_sent_at)
    turn = local.stream_turn(process.port, conversation, token, QUESTION)
    if turn.status != 200 or turn.first_chunk_at is None or turn.events[-1:] != ["Completed"]:
        raise RuntimeError(f"turn failed: {turn.status} {turn.events}\n{process.output()}")
    if len(stack.llm.content_sent_at) != sent_before + 1:
        raise RuntimeError("the fake LLM did not record its first content chunk")
    return turn
