"""Generative answers over real HTTP: the whole answer, and time to the first streamed delta.

The app (every router) in uvicorn on loopback, in this process, with the bench stack's Chroma and the
fake LLM; one round of each after the other, the first round a warm-up. Moved here from the answer
tests, which keep their behaviour checks only.
"""

from __future__ import annotations

import threading
import time

from bench.report import Section

QUESTION = "How do I run the test suite?"
REPLY = "Run make test [source:guide#0]. " + "More words follow here. " * 10
ANSWER, STREAM = "/api/v1/query/answer", "/api/v1/query/answer/stream"


def run(quick: bool = False) -> Section:
    import httpx
    import uvicorn

    from bench.stack import shared
    from rag_orchestrator.api.app import ALL_ROUTERS, create_app
    from tests.fakes.llm_script import text_reply

    section = Section("answers", packages=["uvicorn", "starlette", "httpx"])
    rounds = 5 if quick else 20
    stack = shared()
    stack.llm.default = text_reply(REPLY, chunks=20)
    settings = stack.settings(**stack.llm.settings_for("openai_compatible"))
    server = uvicorn.Server(
        uvicorn.Config(create_app(ALL_ROUTERS, settings), port=0, log_level="warning", lifespan="off")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    whole, first_delta, streamed = [], [], []
    headers = {"X-Caller-Id": "bench"}
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=30) as http:
            for n in range(rounds + 1):
                started = time.perf_counter()
                if http.post(ANSWER, json={"query": QUESTION}).status_code != 200:
                    raise RuntimeError("the whole answer failed")
                took = time.perf_counter() - started
                started, first = time.perf_counter(), None
                with http.stream("POST", STREAM, json={"query": QUESTION}) as response:
                    for line in response.iter_lines():
                        if first is None and line == "event: delta":
                            first = time.perf_counter() - started
                if n and first is not None:
                    whole.append(took * 1000)
                    first_delta.append(first * 1000)
                    streamed.append((time.perf_counter() - started) * 1000)
    finally:
        server.should_exit = True
        thread.join(10)
    section.add("whole answer (POST /query/answer), fake model", "ms", whole)
    section.add("time to the first delta (POST /query/answer/stream)", "ms", first_delta)
    section.add("whole stream, 20 deltas", "ms", streamed)
    return section
