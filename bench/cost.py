"""What 1,000 streamed turns cost at on-demand prices, from counts measured now (docs/cost.md).

- DynamoDB requests and request units of a turn with and without a tool call (bench/dynamodb.py:
  the real Orchestrator on the DynamoDB store on moto, units as DynamoDB bills them, bench/capacity.py);
  the same run's wall time of a whole turn without a model (the service's own work).
- The event log's write units for a turn streaming 1, 10 and 40 s (bench/turns.py), fitted to a line
  of the streaming time (a few batches and progress reports a second).
- S3: the requests the turns sent (none: a turn's messages stay in DynamoDB below the offload size).
- Lambda: the chat-stream function's MemorySize from template.yaml, billed for the service's work
  plus the model's wait (a streaming function bills while it waits), one request per turn.
- What a memory size does to a user's wait: the first token cold and warm at 512, 768 and 1024 MB's CPU
  share (bench/cpu_share.py), and each size's cost beside it.

The model's wait is a parameter (MODEL_WAITS): it is most of a turn's duration and of its cost.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bench.report import ROOT, Section
from bench.turns import PRICES as DYNAMODB_PRICES

# us-east-1, on-demand, as listed on aws.amazon.com/lambda/pricing and /s3/pricing (DynamoDB's from
# bench/turns.py; the lists in force on 2026-11-23, see docs/cost.md): USD.
PRICES = {
    "lambda_gb_second_arm64": 0.0000133334,  # first 7.5 billion GB-seconds a month
    "lambda_request": 0.20 / 1e6,
    "dynamodb_write_unit": DYNAMODB_PRICES["write"] / 1e6,
    "dynamodb_read_unit": DYNAMODB_PRICES["read"] / 1e6,
    "s3_put": 0.005 / 1000,
    "s3_get": 0.0004 / 1000,
}
MODEL_WAITS = (5.0, 20.0)
TURNS = 1000
# issue 35: USD per 1,000 streamed turns without a tool call, by model wait
GOALS = {5.0: 0.05, 20.0: 0.18}


@dataclass(frozen=True)
class TurnCounts:
    """What one turn uses, measured."""

    write_units: float
    read_units: float
    s3_requests: float
    service_seconds: float


@dataclass(frozen=True)
class LogRate:
    """Event-log write units of a streamed turn: `base` plus `per_second` of streaming."""

    base: float
    per_second: float

    @classmethod
    def fit(cls, points: list[tuple[float, float]]) -> LogRate:
        """Least-squares line through (seconds streamed, write units)."""
        n = len(points)
        mean_x = sum(x for x, _ in points) / n
        mean_y = sum(y for _, y in points) / n
        spread = sum((x - mean_x) ** 2 for x, _ in points)
        slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / spread
        return cls(mean_y - slope * mean_x, slope)

    def units(self, seconds: float) -> float:
        return self.base + self.per_second * seconds


@dataclass(frozen=True)
class LogRates:
    """The event log's write and read units, each a line of the seconds streamed."""

    writes: LogRate
    reads: LogRate


def per_thousand(counts: TurnCounts, log: LogRates, model_wait: float, memory_mb: int) -> dict[str, float]:
    """USD per 1,000 turns by part; S3 requests priced as PUTs (the dearer), the log as streaming all along."""
    seconds = counts.service_seconds + model_wait
    gb_seconds = seconds * memory_mb / 1024
    parts = {
        "lambda": gb_seconds * PRICES["lambda_gb_second_arm64"] + PRICES["lambda_request"],
        "dynamodb": counts.write_units * PRICES["dynamodb_write_unit"]
        + counts.read_units * PRICES["dynamodb_read_unit"],
        "event log": log.writes.units(model_wait) * PRICES["dynamodb_write_unit"]
        + log.reads.units(model_wait) * PRICES["dynamodb_read_unit"],
        "s3": counts.s3_requests * PRICES["s3_put"],
    }
    priced = {part: usd * TURNS for part, usd in parts.items()}
    return priced | {"total": sum(priced.values()), "gb_seconds": gb_seconds * TURNS}


def chat_stream_memory() -> int:
    from devserver.cfn_yaml import load_template

    resources = load_template(ROOT / "template.yaml")["Resources"]
    return int(resources["ChatStreamFunction"]["Properties"]["MemorySize"])


def run(quick: bool = False) -> Section:
    from bench import dynamodb, turns

    section = Section("cost", packages=["boto3", "moto"])
    _, usage = dynamodb.measure(quick)
    streamed = turns.log_writes(Section("turns"), quick)
    log = LogRates(
        LogRate.fit([(found["seconds"], found["units"]) for found in streamed.values()]),
        LogRate.fit([(found["seconds"], found["read units"]) for found in streamed.values()]),
    )
    memory = chat_stream_memory()
    rows: list[dict[str, Any]] = []
    for kind, used in usage.items():
        counts = TurnCounts(used["write"], used["read"], used["s3"], used["seconds"])
        for wait in MODEL_WAITS:
            priced = per_thousand(counts, log, wait, memory)
            figure = section.add(f"{kind}, model wait {wait:g} s", "USD per 1,000 turns", priced["total"])
            if kind == "turn without a tool call":
                figure.goal, figure.met = f"<= ${GOALS[wait]:g}", priced["total"] <= GOALS[wait]
            rows.append(
                {"turn": kind, "model wait s": wait, "DynamoDB WRU": used["write"], "RRU": used["read"]}
                | {"log WRU": round(log.writes.units(wait), 1), "log RRU": round(log.reads.units(wait), 1)}
                | {"service s": round(counts.service_seconds, 3)}
                | {part: f"{usd:.4f}" for part, usd in priced.items() if part != "gb_seconds"}
                | {"GB-s": round(priced["gb_seconds"], 1)}
            )
    section.details["per 1,000 turns (USD)"] = rows
    section.details["inputs"] = {
        "chat-stream MemorySize (template.yaml)": f"{memory} MB",
        "event log": f"{log.writes.base:.1f} + {log.writes.per_second:.2f} write units and "
        f"{log.reads.base:.1f} + {log.reads.per_second:.2f} read units per second streamed",
        "prices (USD)": ", ".join(f"{name} {price:.10g}" for name, price in PRICES.items()),
    }
    first = next(iter(usage.values()))
    _memory_sizes(
        section, TurnCounts(first["write"], first["read"], first["s3"], first["seconds"]), log, quick
    )
    return section


def _memory_sizes(section: Section, counts: TurnCounts, log: LogRates, quick: bool) -> None:
    """Each size's first token, cold and warm, at its CPU share, beside its cost (the size is chosen from it)."""
    from bench import cpu_share
    from bench import layout as lambda_layout
    from bench import stack as local
    from tests.fakes.llm_script import text_reply

    layout, stack = lambda_layout.prepare(), local.shared()
    stack.llm.default = text_reply("Run make test [source:guide#0].", chunks=5)
    table = []
    try:
        for memory_mb in cpu_share.SIZES_MB:
            limit = cpu_share.quota(memory_mb)
            try:
                found = cpu_share.first_tokens(layout, stack, limit, 3 if quick else 7, 10 if quick else 30)
            finally:
                limit.remove()
            at = f"at {memory_mb} MB's CPU share ({limit.share:.2f} vCPU)"
            section.add(f"chat_stream {at}: fresh process until it listens", "s", found.listening)
            section.add(f"chat_stream {at}: fresh process until the first ResponseChunk", "s", found.cold)
            section.add(f"chat_stream {at}: warm, request -> first ResponseChunk", "s", found.warm)
            table.append(
                {"MemorySize MB": memory_mb, "vCPU": round(limit.share, 2)}
                | {"listening ms": cpu_share.median_ms(found.listening)}
                | {"cold first token ms": cpu_share.median_ms(found.cold)}
                | {
                    "cold first token, CPU ÷ share ms": cpu_share.median_ms(
                        [c / limit.share for c in found.cold_cpu]
                    )
                }
                | {"warm first token ms": cpu_share.median_ms(found.warm)}
                | {
                    f"USD / 1,000 at {wait:g} s": round(
                        per_thousand(counts, log, wait, memory_mb)["total"], 4
                    )
                    for wait in MODEL_WAITS
                }
                | {
                    "CPU share": "cgroup CPU quota"
                    if limit.emulated
                    else "full core, times divided by the share"
                }
            )
    finally:
        stack.llm.default = None
    section.details["memory sizes: first token and cost (turn without a tool call)"] = table
