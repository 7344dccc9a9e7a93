"""Warm chat-stream processes, one per mode, taking turns in alternation, so that load on the machine
hits every mode alike (bench/memory.py: memory on and off; bench/titles.py: titles on and off); and
two ways of doing one thing in this process, called in alternation (`in_process`).

Per turn, with the clocks of bench/ttft.py:
- added first-token delay: the fake LLM's first content delta of the turn's answer -> the client's
  first ResponseChunk;
- request sent -> first ResponseChunk;
- Completed received -> end of the response: the after-turn work, which the client need not wait for
  (the terminal event is out) and Lambda bills.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from bench import stack as local
from bench.report import Section

MEASURES = ("added", "first", "after")
# What a bench's turn gives: the turn, and when the fake LLM sent its answer's first content delta;
# None for a turn refused before its stream (counted, not measured).
Take = Callable[[str, local.ChatStreamProcess], "tuple[local.StreamedTurn, float] | None"]
Samples = dict[str, dict[str, list[float]]]


def ms(later: float | None, earlier: float | None) -> float:
    assert later is not None and earlier is not None
    return (later - earlier) * 1000


def alternate(
    layout: Any, envs: dict[str, dict[str, str]], take: Take, runs: int, warmup: int
) -> tuple[Samples, dict[str, int]]:
    """`warmup + runs` rounds of one turn per mode; the samples of the last `runs`, and the refusals."""
    samples: Samples = {mode: {measure: [] for measure in MEASURES} for mode in envs}
    refused = dict.fromkeys(envs, 0)
    processes = {mode: local.ChatStreamProcess(layout, env) for mode, env in envs.items()}
    try:
        for process in processes.values():
            process.wait_listening()
        for n in range(warmup + runs):
            for mode, process in processes.items():
                taken = take(mode, process)
                if taken is None:
                    refused[mode] += 1
                    continue
                turn, answer_sent = taken
                if n >= warmup:
                    samples[mode]["added"].append(ms(turn.first_chunk_at, answer_sent))
                    samples[mode]["first"].append(ms(turn.first_chunk_at, turn.sent_at))
                    samples[mode]["after"].append(ms(turn.ended_at, turn.completed_at))
    finally:
        for process in processes.values():
            process.stop()
    return samples, refused


def report(section: Section, name: str, samples: Samples, which: str) -> None:
    """The three rows of each mode; `which` names the turns measured ("warm", "first turn")."""
    for mode, taken in samples.items():
        section.add(
            f"{name} {mode}: added first-token delay, {which} (fake LLM -> client)", "ms", taken["added"]
        )
        section.add(f"{name} {mode}: request sent -> first ResponseChunk, {which}", "ms", taken["first"])
        section.add(
            f"{name} {mode}: Completed -> end of response (after-turn work), {which}", "ms", taken["after"]
        )


def in_process(
    section: Section,
    labels: tuple[str, str],
    calls: tuple[Callable[[int], object], Callable[[int], object]],
    runs: int,
    warmup: int = 10,
) -> None:
    """The two `calls` (each given the round's number) in alternation, `warmup + runs` rounds; a row each
    of the thread CPU per call over the last `runs` (ms), the second's noted as a multiple of the first's."""
    cpu: tuple[list[float], list[float]] = ([], [])
    for n in range(warmup + runs):
        for call, samples in zip(calls, cpu, strict=True):
            begun = time.thread_time()
            call(n)
            if n >= warmup:
                samples.append((time.thread_time() - begun) * 1000)
    first = section.add(labels[0], "ms", cpu[0])
    second = section.add(labels[1], "ms", cpu[1])
    second.note = f"{second.median / first.median:.1f}x the first" if first.median else ""
