"""A warm chat-stream process serving CONCURRENT streamed turns at once: turns per second, first token.

One chat-stream process (as bench/ttft.py runs it) on the bench stack, the fake LLM in a process of
its own (bench/llm_process.py) answering each request with TOKENS tokens at once. After a few turns
one at a time (the baseline), rounds of CONCURRENT turns are sent together from client threads over
plain sockets, each in a conversation of its own (a conversation takes one turn at a time). Per round:
turns / (last end - first send); per turn: request sent -> first ResponseChunk; and the CPU the
chat-stream process and the moto server spent per turn (/proc/<pid>/stat): on this machine's two
shared cores the moto server, not the service, is what the turns queue for.

In Lambda an execution environment serves one invocation at a time, so 50 concurrent turns are 50
environments; this is what one process does where it serves many (a container, `make dev`).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from bench import layout as lambda_layout
from bench import stack as local
from bench.llm_process import LLMProcess
from bench.memory_use import cpu_seconds
from bench.report import Section

CONCURRENT = 50
TOKENS = 50
QUESTION = "How do I run the test suite?"


def _turn(port: int, conversation: str, token: str) -> local.StreamedTurn:
    turn = local.stream_turn(port, conversation, token, QUESTION, timeout=120)
    if turn.status != 200 or turn.events[-1:] != ["Completed"] or turn.first_chunk_at is None:
        raise RuntimeError(f"turn failed: {turn.status} {turn.events[-3:]}")
    return turn


def _first_ms(turn: local.StreamedTurn) -> float:
    assert turn.first_chunk_at is not None
    return (turn.first_chunk_at - turn.sent_at) * 1000


def run(quick: bool = False) -> Section:
    section = Section("concurrency", packages=["uvicorn", "httpx", "boto3"])
    rounds, alone = (1, 5) if quick else (3, 20)
    layout = lambda_layout.prepare()
    stack = local.shared()
    token = stack.token()
    with LLMProcess(TOKENS) as llm:
        env = stack.stream_env(layout) | {"OPENAI_COMPATIBLE_BASE_URL": llm.url}
        process = local.ChatStreamProcess(layout, env)
        try:
            process.wait_listening()
            _turn(process.port, stack.conversation(), token)  # the first turn's imports and connections
            single = [_first_ms(_turn(process.port, stack.conversation(), token)) for _ in range(alone)]
            rates, firsts = [], []
            pids = {"chat-stream process": process.process.pid, "moto server": stack.services[0].process.pid}
            used = dict.fromkeys(pids, 0.0)
            with ThreadPoolExecutor(CONCURRENT) as pool:
                for _ in range(rounds):
                    conversations = [stack.conversation() for _ in range(CONCURRENT)]
                    before = {name: cpu_seconds(pid) for name, pid in pids.items()}
                    turns = list(pool.map(lambda c: _turn(process.port, c, token), conversations))
                    for name, pid in pids.items():
                        used[name] += cpu_seconds(pid) - before[name]
                    span = max(t.ended_at for t in turns) - min(t.sent_at for t in turns)
                    rates.append(CONCURRENT / span)
                    firsts += [_first_ms(t) for t in turns]
        finally:
            process.stop()
    section.add(f"one turn at a time: request sent -> first ResponseChunk ({TOKENS} tokens)", "ms", single)
    section.add(f"{CONCURRENT} concurrent turns: turns per second", "turns/s", rates)
    section.add(f"{CONCURRENT} concurrent turns: request sent -> first ResponseChunk", "ms", firsts)
    for name, seconds in used.items():
        section.add(
            f"{CONCURRENT} concurrent turns: CPU of the {name} per turn",
            "ms",
            seconds / rounds / CONCURRENT * 1000,
        )
    return section
