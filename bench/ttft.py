"""Time to first token added, warm: fake LLM's first content chunk written -> client has the first ResponseChunk.

One chat-stream process (uvicorn in the Lambda-like layout, as bench/cold.py starts it), warmed up,
then one turn after another on loopback, each in a new conversation. The fake LLM notes
time.monotonic() as it writes a reply's first content delta; the client (a plain socket) notes it
as the first `event: ResponseChunk` arrives. Both run in this process, so the clocks agree.
"""

from __future__ import annotations

from bench import layout as lambda_layout
from bench import stack as local
from bench.report import Section

GOAL_MS = 5.0
QUESTION = "How do I run the test suite?"


def run(quick: bool = False) -> Section:
    from tests.fakes.llm_script import text_reply

    section = Section("ttft", packages=["uvicorn", "starlette", "httpx", "httpx-sse"])
    runs, warmup = (30, 5) if quick else (200, 20)
    layout = lambda_layout.prepare()
    stack = local.shared()
    stack.llm.default = text_reply("Run make test [source:guide#0].", chunks=5)
    process = local.ChatStreamProcess(layout, stack.stream_env(layout))
    token = stack.token()
    added: list[float] = []
    request: list[float] = []
    whole: list[float] = []
    try:
        process.wait_listening()
        for n in range(warmup + runs):
            conversation = stack.conversation()
            sent_before = len(stack.llm.content_sent_at)
            turn = local.stream_turn(process.port, conversation, token, QUESTION)
            if turn.status != 200 or turn.first_chunk_at is None or turn.events[-1:] != ["Completed"]:
                raise RuntimeError(f"turn failed: {turn.status} {turn.events}\n{process.output()}")
            if len(stack.llm.content_sent_at) != sent_before + 1:
                raise RuntimeError("the fake LLM did not record its first content chunk")
            if n >= warmup:
                added.append((turn.first_chunk_at - stack.llm.content_sent_at[-1]) * 1000)
                request.append((turn.first_chunk_at - turn.sent_at) * 1000)
                whole.append((turn.ended_at - turn.first_chunk_at) * 1000)
    finally:
        process.stop()
    figure = section.add("added first-token delay, warm (fake LLM -> client)", "ms", added)
    figure.goal, figure.met = f"< {GOAL_MS} ms p95", (figure.p95 or figure.median) < GOAL_MS
    section.add(
        "request sent -> first ResponseChunk, warm (auth, DynamoDB, Chroma search, model call)", "ms", request
    )
    section.add("first ResponseChunk -> end of stream (5 chunks, Sources, Completed)", "ms", whole)
    return section
