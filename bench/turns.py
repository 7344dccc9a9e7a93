"""Durable turns: what the event log costs in DynamoDB writes, and how fast a reconnect and a cancel are.

- writes: one streamed turn of 50, 500 and 2000 chunks at CHUNKS_PER_SECOND (a model streaming a token a
  chunk), in this process: the real Orchestrator and TurnStream over the DynamoDB store and event log on
  the bench's moto server, a reader taking the events as they come. A botocore hook counts each request
  and sizes each item the log writes, as DynamoDB bills them (write request units, 1 KB each).
- resume: a chat-stream process (as in ttft) has streamed a turn; a plain-socket client reconnects with
  `Last-Event-ID` half way: request sent -> first replayed event; in alternating rounds with a process
  of the pinned baseline code (bench/layout.py), whose ratio must not show it slower.
- cancel: two chat-stream processes; a turn streams on one, held mid-answer by the fake LLM's Gate; the
  cancel is sent to the same process or the other, at a random moment of the turn's half-second report
  cycle (as a person's would be): request sent -> Completed on the turn's stream.
- the cost per 1,000 turns the log adds, at DynamoDB on-demand prices (PRICES).
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import socket
import statistics
import time
from collections import Counter
from typing import Any
from urllib.request import Request, urlopen

from bench import layout as lambda_layout
from bench import stack as local
from bench.report import Section
from rag_orchestrator.providers.strategies import StrategyMetadata

CHUNKS_PER_SECOND = 50
LENGTHS = (50, 500, 2000)
# DynamoDB on-demand, standard table class, us-east-1, as listed on aws.amazon.com/dynamodb/pricing/on-demand/
# (looked up 2026-11-23; halved in November 2024): USD per million request units.
PRICES = {"write": 0.625, "read": 0.125}


def item_size(value: dict[str, Any]) -> int:
    """Bytes of an item in DynamoDB's wire form, by the Developer Guide's rules for item sizes."""
    return sum(len(name.encode()) + _value_size(v) for name, v in value.items())


def _value_size(value: dict[str, Any]) -> int:
    ((kind, inner),) = value.items()
    if kind == "S":
        return len(inner.encode())
    if kind == "B":
        return len(inner)
    if kind == "N":
        return (len(inner.strip("-").replace(".", "")) + 1) // 2 + 1
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "L":
        return 3 + sum(1 + _value_size(v) for v in inner)
    if kind == "M":
        return 3 + sum(1 + item_size({k: v}) for k, v in inner.items())
    return len(json.dumps(inner))


class PacedStrategy:
    """Streams `chunks` one-word chunks at `per_second`, then answers."""

    name = "paced"
    metadata = StrategyMetadata("paced", "paced-model", reasoning=False)  # what a turn's spans name

    def __init__(self, chunks: int, per_second: float) -> None:
        self.chunks, self.pause = chunks, 1 / per_second

    async def run_iteration(self, messages: Any, tools: Any, ctx: Any):
        from rag_orchestrator.providers import events as se

        for _ in range(self.chunks):
            yield se.ContentChunk("word ")
            await asyncio.sleep(self.pause)
        yield se.FinalResponse("word " * self.chunks)
        yield se.IterationComplete(se.Usage(10, self.chunks, 10 + self.chunks))


def log_writes(section: Section, quick: bool) -> dict[int, dict[str, float]]:
    from bench.dynamodb import WireCounter
    from rag_orchestrator.api.deps import process_aws, stream_config
    from rag_orchestrator.conversations.factory import create_store
    from rag_orchestrator.domain.callers import Caller
    from rag_orchestrator.domain.conversations import Conversation
    from rag_orchestrator.loop.control import RunningTurns
    from rag_orchestrator.loop.request import TurnRequest
    from rag_orchestrator.loop.turn_stream import TurnStream
    from rag_orchestrator.stream_log.factory import create_event_log
    from tests.fakes.scripted import scripted_orchestrator

    aws = process_aws()

    stack = local.shared()
    settings = stack.settings(loop_initial_rag=False)
    aws.reset()
    client = aws.client("dynamodb")
    wire = WireCounter({"dynamodb": client})
    units: Counter[str] = Counter()

    def written(params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name == "PutItem":
            units["log"] += math.ceil(item_size(params["Item"]) / 1024)
        elif model.name == "UpdateItem":
            units["log"] += 1  # the turn's entry: well under 1 KB before and after
        elif model.name == "GetItem" and params["Key"]["SK"]["S"].startswith("TURN#"):
            units["log reads"] += 1  # a running turn asking its entry about a cancel: consistent, < 4 KB

    client.meta.events.register("provide-client-params.dynamodb", written)
    store, log = create_store(settings, aws), create_event_log(settings, aws)
    rate = CHUNKS_PER_SECOND * (4 if quick else 1)
    found: dict[int, dict[str, float]] = {}

    async def one_turn(chunks: int) -> dict[str, int]:
        orchestrator = scripted_orchestrator(PacedStrategy(chunks, rate), store=store, settings=settings)
        conversation = await store.create(Conversation(caller_id="bench"))
        wire.take()
        units.clear()
        turn = await orchestrator.begin(TurnRequest(conversation.conversation_id, Caller("bench"), "Hi"))
        stream = TurnStream(turn, log=log, running=RunningTurns(), config=stream_config(settings))
        stream.start()
        async for _ in stream.frames():
            pass
        await stream.finished()
        return wire.take()

    for chunks in LENGTHS[:2] if quick else LENGTHS:
        taken = asyncio.run(one_turn(chunks))
        writes = taken.get("dynamodb.PutItem", 0) + taken.get("dynamodb.UpdateItem", 0)
        store_requests = sum(n for key, n in taken.items() if key.startswith("dynamodb.")) - writes
        seconds = chunks / rate
        section.add(f"{chunks} chunks ({seconds:g} s): event log writes", "requests", float(writes))
        section.add(f"{chunks} chunks: event log write units", "WRU", float(units["log"]))
        section.add(f"{chunks} chunks: event log read units", "RRU", float(units["log reads"]))
        section.details[f"{chunks} chunks: requests"] = ", ".join(
            f"{k} x{n}" for k, n in sorted(taken.items())
        )
        found[chunks] = {
            "writes": writes,
            "units": units["log"],
            "read units": units["log reads"],
            "store": store_requests,
            "seconds": seconds,
        }
    aws.reset()
    return found


def _send(port: int, head: str, body: bytes = b"") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.sendall(head.encode() + body)
    return sock


def _read_until(sock: socket.socket, marker: bytes, seen: bytes = b"") -> tuple[float, bytes]:
    """Read until `marker` arrives; the moment it did, and all read so far."""
    while marker not in seen:
        data = sock.recv(65536)
        if not data:
            raise RuntimeError(f"stream closed before {marker!r}: {seen[-500:]!r}")
        seen += data
    return time.monotonic(), seen


def _stream_head(port: int, conversation: str, token: str, body: bytes) -> str:
    return (
        f"POST /api/v1/chat/conversations/{conversation}/messages/stream HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )


def _turn_id(received: bytes) -> str:
    return received.split(b'"turnId":"', 1)[1].split(b'"', 1)[0].decode()


def _resume(stack: Any, port: int, quick: bool) -> list[float]:
    """ms from a reconnect with Last-Event-ID half way through a finished turn to its first replayed event."""
    from tests.fakes.llm_script import text_reply

    stack.llm.default = text_reply("word " * 40, chunks=40)
    token, conversation = stack.token(), stack.conversation()
    body = json.dumps({"message": "How do I run the test suite?"}).encode()
    with _send(port, _stream_head(port, conversation, token, body), body) as sock:
        _, received = _read_until(sock, b"event: Completed")
    turn_id = _turn_id(received)
    samples = []
    for _ in range(10 if quick else 50):
        head = (
            f"GET /api/v1/chat/conversations/{conversation}/turns/{turn_id}/events HTTP/1.1\r\n"
            f"Host: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\nLast-Event-ID: {turn_id}:20\r\n"
            "Connection: close\r\n\r\n"
        )
        sent = time.monotonic()
        with _send(port, head) as sock:
            first, _ = _read_until(sock, b"\nid: ")
        samples.append((first - sent) * 1000)
    return samples


def _cancel(section: Section, stack: Any, ports: tuple[int, int], quick: bool) -> None:
    from tests.fakes.llm_script import text_reply

    stack.llm.default = text_reply("word " * 40, chunks=40, gate_after=3)  # the gate is never opened
    token = stack.token()
    body = json.dumps({"message": "How do I run the test suite?"}).encode()
    phase = random.Random(15)
    for where, cancel_port in (("same process", ports[0]), ("another process", ports[1])):
        samples = []
        for _ in range(3 if quick else 10):
            conversation = stack.conversation()
            with _send(ports[0], _stream_head(ports[0], conversation, token, body), body) as sock:
                _, received = _read_until(sock, b"event: ResponseChunk")
                time.sleep(phase.uniform(0, 0.5))
                url = f"http://127.0.0.1:{cancel_port}/api/v1/chat/conversations/{conversation}/turns/"
                request = Request(
                    url + f"{_turn_id(received)}/cancel",
                    b"",
                    {"Authorization": f"Bearer {token}"},
                    method="POST",
                )
                sent = time.monotonic()
                with urlopen(request, timeout=10) as answer:
                    if answer.status != 202:
                        raise RuntimeError(f"cancel answered {answer.status}")
                ended, _ = _read_until(sock, b"event: Completed", received)
            samples.append((ended - sent) * 1000)
        section.add(f"cancel from {where} -> Completed on the stream", "ms", samples)


def run(quick: bool = False) -> Section:
    section = Section("turns", packages=["boto3", "botocore", "moto", "uvicorn"])
    found = log_writes(section, quick)
    for chunks, counts in found.items():
        dollars = (counts["units"] * PRICES["write"] + counts["read units"] * PRICES["read"]) / 1e6 * 1000
        section.add(f"{chunks} chunks: event log cost per 1,000 turns", "USD", dollars)
    section.details["prices"] = (
        f"on-demand, us-east-1, USD per million: writes {PRICES['write']}, reads {PRICES['read']} "
        "(looked up 2026-11-23); the log's items live an hour, so storage is negligible; TTL deletes are free"
    )
    layout = lambda_layout.prepare()
    baseline = lambda_layout.prepare_baseline(layout)
    stack = local.shared()
    processes = [local.ChatStreamProcess(layout, stack.stream_env(layout)) for _ in range(2)]
    processes.append(local.ChatStreamProcess(baseline, stack.stream_env(baseline)))
    try:
        for process in processes:
            process.wait_listening()
        _resume_against_baseline(section, stack, processes[0].port, processes[2].port, quick)
        _cancel(section, stack, (processes[0].port, processes[1].port), quick)
    finally:
        for process in processes:
            process.stop()
        stack.llm.default = None
    return section


def _resume_against_baseline(
    section: Section, stack: Any, port: int, baseline_port: int, quick: bool
) -> None:
    """A reconnect's first replayed event, today's process beside the baseline's (bench/layout.py), in
    alternating rounds: fewer, larger log items must not make it slower."""
    commit = lambda_layout.BASELINE_COMMIT[:7]
    today, before = [], []
    for _ in range(2 if quick else 3):
        today += _resume(stack, port, quick)
        before += _resume(stack, baseline_port, quick)
    section.add("resume: reconnect with Last-Event-ID -> first replayed event", "ms", today)
    section.add(f"resume (baseline {commit}): the same", "ms", before)
    ratio = section.add(
        f"resume: first replayed event, today ÷ baseline ({commit}), medians",
        "x",
        statistics.median(today) / statistics.median(before),
    )
    ratio.goal, ratio.met = "<= 1.1 (not slower, within noise)", ratio.median <= 1.1
