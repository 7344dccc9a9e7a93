"""What 1,000 streamed turns cost at on-demand prices, from counts measured now (docs/cost.md).

- DynamoDB requests and request units of a turn with and without a tool call (bench/dynamodb.py:
  the real Orchestrator on the DynamoDB store on moto, units as DynamoDB bills them, bench/capacity.py);
  the same run's wall time of a whole turn without a model (the service's own work).
- The event log's write units for a turn streaming 1, 10 and 40 s (bench/turns.py), fitted to a line
  of the streaming time (a few batches and progress reports a second).
- S3: the requests the turns sent (none: a turn's messages stay in DynamoDB below the offload size).
- Lambda: the chat-stream function's MemorySize from template.yaml, billed for the service's work
  plus the model's wait (a streaming function bills while it waits), one request per turn.

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


def per_thousand(counts: TurnCounts, log: LogRate, model_wait: float, memory_mb: int) -> dict[str, float]:
    """USD per 1,000 turns by part; S3 requests priced as PUTs (the dearer), the log as streaming all along."""
    seconds = counts.service_seconds + model_wait
    gb_seconds = seconds * memory_mb / 1024
    parts = {
        "lambda": gb_seconds * PRICES["lambda_gb_second_arm64"] + PRICES["lambda_request"],
        "dynamodb": counts.write_units * PRICES["dynamodb_write_unit"]
        + counts.read_units * PRICES["dynamodb_read_unit"],
        "event log": log.units(model_wait) * PRICES["dynamodb_write_unit"],
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
    log = LogRate.fit([(found["seconds"], found["units"]) for found in streamed.values()])
    memory = chat_stream_memory()
    rows: list[dict[str, Any]] = []
    for kind, used in usage.items():
        counts = TurnCounts(used["write"], used["read"], used["s3"], used["seconds"])
        for wait in MODEL_WAITS:
            priced = per_thousand(counts, log, wait, memory)
            section.add(f"{kind}, model wait {wait:g} s", "USD per 1,000 turns", priced["total"])
            rows.append(
                {"turn": kind, "model wait s": wait, "DynamoDB WRU": used["write"], "RRU": used["read"]}
                | {"log WRU": round(log.units(wait), 1), "service s": round(counts.service_seconds, 3)}
                | {part: f"{usd:.4f}" for part, usd in priced.items() if part != "gb_seconds"}
                | {"GB-s": round(priced["gb_seconds"], 1)}
            )
    section.details["per 1,000 turns (USD)"] = rows
    section.details["inputs"] = {
        "chat-stream MemorySize (template.yaml)": f"{memory} MB",
        "event log": f"{log.base:.1f} + {log.per_second:.2f} write units per second streamed",
        "prices (USD)": ", ".join(f"{name} {price:.10g}" for name, price in PRICES.items()),
    }
    return section
