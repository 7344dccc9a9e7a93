"""The usage report (GET /api/v1/admin/usage, docs/usage.md): what each turn spent, counted per UTC
day, caller and model, grouped on demand and priced with MODEL_PRICES."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Literal

from pydantic import Field

from rag_orchestrator.domain.base import CamelModel

GroupBy = Literal["caller", "day", "model"]
PER_TOKENS = 1_000_000  # MODEL_PRICES are per million tokens


@dataclass(frozen=True, slots=True)
class Price:
    input: float  # per million input tokens
    output: float  # per million output tokens


@dataclass(frozen=True, slots=True)
class Prices:
    by_model: tuple[tuple[str, Price], ...] = ()

    @classmethod
    def parse(cls, text: str | None) -> Prices:
        """`deepseek-flash=0.28/0.42,qwen-plus=0.4/1.2` (input/output per million tokens);
        ValueError naming what is wrong."""
        prices: dict[str, Price] = {}
        for part in (text or "").split(","):
            if not part.strip():
                continue
            model, sep, pair = part.partition("=")
            model = model.strip()
            given, slash, taken = pair.partition("/")
            if not sep or not model or not slash:
                raise ValueError(f"expected model=input/output, got {part.strip()!r}")
            if model in prices:
                raise ValueError(f"model {model!r} priced twice")
            prices[model] = Price(_price(given), _price(taken))
        return cls(tuple(prices.items()))

    def of(self, model: str) -> Price | None:
        return dict(self.by_model).get(model)


def _price(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"a price must be a number, got {text.strip()!r}") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"a price must be zero or more, got {text.strip()!r}")
    return value


@dataclass(slots=True)
class UsageLine:
    """One day's spending of one caller on one model: what the store counts, turn by turn."""

    day: str  # YYYY-MM-DD, UTC
    caller_id: str
    model: str
    turns: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


def days(first: date, last: date) -> Iterator[str]:
    """The UTC days from `first` to `last` inclusive, as YYYY-MM-DD."""
    for offset in range((last - first).days + 1):  # no day past `last` is made: date.max is a day too
        yield (first + timedelta(days=offset)).isoformat()


class UsageRow(CamelModel):
    key: str  # the caller id, the day (YYYY-MM-DD) or the model, as grouped
    turns: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    estimated_cost: float = 0.0  # of the priced models' tokens, in MODEL_PRICES' currency


class UsageReport(CamelModel):
    from_: date = Field(alias="from")
    to: date
    group_by: GroupBy
    rows: list[UsageRow]  # callers and models by cost then tokens, highest first; days in order
    total: UsageRow  # key "total"
    unpriced_models: list[str]  # models used without a MODEL_PRICES entry (their cost counts 0)


def cost(line: UsageLine, prices: Prices) -> float | None:
    price = prices.of(line.model)
    if price is None:
        return None
    return (line.input_tokens * price.input + line.output_tokens * price.output) / PER_TOKENS


def _add(row: UsageRow, line: UsageLine, spent: float) -> None:
    row.turns += line.turns
    row.tool_calls += line.tool_calls
    row.input_tokens += line.input_tokens
    row.output_tokens += line.output_tokens
    row.estimated_cost += spent


def build_report(
    lines: Iterable[UsageLine], group_by: GroupBy, prices: Prices, first: date, last: date
) -> UsageReport:
    """The lines grouped by caller, day or model, each group priced model by model."""
    rows: dict[str, UsageRow] = {}
    total = UsageRow(key="total")
    unpriced: set[str] = set()
    for line in lines:
        spent = cost(line, prices)
        if spent is None:
            unpriced.add(line.model)
        key = {"caller": line.caller_id, "day": line.day, "model": line.model}[group_by]
        row = rows.setdefault(key, UsageRow(key=key))
        _add(row, line, spent or 0.0)
        _add(total, line, spent or 0.0)
    if group_by == "day":
        ordered = sorted(rows.values(), key=lambda r: r.key)
    else:
        ordered = sorted(
            rows.values(), key=lambda r: (-r.estimated_cost, -(r.input_tokens + r.output_tokens), r.key)
        )
    for row in [*ordered, total]:
        row.estimated_cost = round(row.estimated_cost, 6)
    return UsageReport(
        from_=first, to=last, group_by=group_by, rows=ordered, total=total, unpriced_models=sorted(unpriced)
    )
