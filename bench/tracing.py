"""Tracing's cost per turn: the loop benchmark's turn (a tool call, then an answer; scripted model,
in-process store) with tracing off, and on, exporting over OTLP/HTTP to a receiver on loopback
(devserver/traces.py). CPU is the whole process's (the exporter's thread included), per turn.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from bench.loop import ours
from bench.report import Section


def _turns(tracer: Any, runs: int, warmup: int) -> tuple[list[float], float]:
    """Wall ms of each turn, and process CPU ms per turn, flushing the spans at the end."""
    turn = ours(tracer)

    async def main() -> tuple[list[float], float]:
        for _ in range(warmup):
            await turn()
        tracer.flush()
        cpu = time.process_time()
        walls = [await turn() * 1000 for _ in range(runs)]
        tracer.flush()
        return walls, (time.process_time() - cpu) * 1000 / runs

    return asyncio.run(main())


def run(quick: bool = False) -> Section:
    from devserver.traces import TraceReceiver
    from rag_orchestrator.otel_tracing import OtelTracer
    from rag_orchestrator.tracing import NO_TRACER

    section = Section("tracing", packages=["opentelemetry-sdk", "opentelemetry-exporter-otlp-proto-http"])
    runs, warmup = (200, 30) if quick else (2000, 200)
    receiver = TraceReceiver()
    try:
        off_wall, off_cpu = _turns(NO_TRACER, runs, warmup)
        tracer = OtelTracer(receiver.url)
        on_wall, on_cpu = _turns(tracer, runs, warmup)
        tracer.shutdown()
    finally:
        receiver.stop()
    section.add("turn, tracing off (wall)", "ms", off_wall)
    section.add("turn, tracing on (wall)", "ms", on_wall)
    section.add("process CPU per turn, tracing off", "ms", off_cpu)
    section.add("process CPU per turn, tracing on (export included)", "ms", on_cpu)
    section.details["spans received per turn"] = round(len(receiver.received()) / (runs + warmup), 1)
    return section
