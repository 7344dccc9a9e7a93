"""A chat-stream process held to the CPU share Lambda gives a memory size, and its first token there.

Lambda gives a function CPU in proportion to its memory: one vCPU at 1,769 MB
(docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html), so 512 MB is 0.29 of one. Here that
share is a CFS quota on a cgroup of the chat-stream process's own (cgroup v2's cpu.max, or v1's
cpu.cfs_quota_us; writing them needs root). Where neither can be written, the process runs at a full
core and its times are divided by the share, which `Quota.emulated` says.

Per memory size: fresh processes until they listen and until their first ResponseChunk (cold), then
request → first ResponseChunk of later turns on one of them (warm). A quota caps a process's CPU; on a
machine busy with other work it gets less than its cap, so the cold figures are also given as the CPU
the process used until its first token divided by the share (what an idle machine would show).
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench import layout as lambda_layout
from bench import stack as local
from bench.memory_use import cpu_seconds

MB_PER_VCPU = 1769
SIZES_MB = (512, 768, 1024)
PERIOD_US = 100_000
CGROUPS = (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/cpu"))  # v2's root, v1's cpu controller


@dataclass(frozen=True)
class Quota:
    """Where the processes of one memory size run: a cgroup with its CPU quota, or None (scaled)."""

    memory_mb: int
    group: Path | None

    @property
    def share(self) -> float:
        return self.memory_mb / MB_PER_VCPU

    @property
    def emulated(self) -> bool:
        return self.group is not None

    def enter(self) -> None:
        """Put the calling process (a child before its exec) into the group."""
        if self.group is not None:
            (self.group / "cgroup.procs").write_text(str(os.getpid()))

    def scaled(self, seconds: float) -> float:
        """What `seconds` measured here take at this share."""
        return seconds if self.emulated else seconds / self.share

    def remove(self) -> None:
        if self.group is not None:
            self.group.rmdir()


def quota(memory_mb: int) -> Quota:
    """A cgroup holding its processes to memory_mb's CPU share, when this machine lets us make one."""
    limit = round(memory_mb / MB_PER_VCPU * PERIOD_US)
    for root in CGROUPS:
        group = root / f"rag-bench-{memory_mb}mb-{os.getpid()}"
        v2 = (root / "cgroup.controllers").is_file()
        knob = "cpu.max" if v2 else "cpu.cfs_quota_us"
        if not (v2 or (root / knob).is_file()):
            continue
        try:
            group.mkdir()
        except OSError:
            continue
        try:
            (group / knob).write_text(f"{limit} {PERIOD_US}" if v2 else str(limit))
            if not v2:
                (group / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            return Quota(memory_mb, group)
        except OSError:
            group.rmdir()
    return Quota(memory_mb, None)


@dataclass(frozen=True)
class FirstTokens:
    listening: list[float]  # s, fresh process
    cold: list[float]  # s, fresh process until its first ResponseChunk
    cold_cpu: list[float]  # its CPU seconds until then (the same under any quota)
    warm: list[float]  # s, request -> first ResponseChunk on a warm process


def first_tokens(
    layout: lambda_layout.Layout, stack: local.LocalStack, limit: Quota, fresh: int, warm: int
) -> FirstTokens:
    """`fresh` cold starts and `warm` warm turns of chat-stream processes held to `limit`."""
    listening, cold, cold_cpu, warm_s = [], [], [], []
    for index in range(fresh):
        process = local.ChatStreamProcess(layout, stack.stream_env(layout), preexec=limit.enter)
        try:
            listening.append(limit.scaled(process.wait_listening()))
            pid = process.process.pid
            turn = _turn(process, stack, lambda pid=pid: cold_cpu.append(cpu_seconds(pid)))
            cold.append(limit.scaled(turn.first_chunk_at - process.started))
            if index == fresh - 1:
                for _ in range(warm):
                    sent = _turn(process, stack)
                    warm_s.append(limit.scaled(sent.first_chunk_at - sent.sent_at))
        finally:
            process.stop()
    return FirstTokens(listening, cold, cold_cpu, warm_s)


def _turn(
    process: local.ChatStreamProcess,
    stack: local.LocalStack,
    on_first_chunk: Callable[[], None] | None = None,
) -> local.StreamedTurn:
    turn = local.stream_turn(
        process.port,
        stack.conversation(),
        stack.token(),
        "How do I run the test suite?",
        on_first_chunk=on_first_chunk,
    )
    if turn.status != 200 or turn.first_chunk_at is None or turn.events[-1:] != ["Completed"]:
        raise RuntimeError(f"turn failed: {turn.status} {turn.events}\n{process.output()}")
    return turn


def median_ms(values: list[float]) -> float:
    return round(statistics.median(values) * 1000)
