"""The usage report's arithmetic (domain/usage.py): MODEL_PRICES parsed, lines grouped and priced
model by model, callers and models by cost, days in order."""

from __future__ import annotations

from datetime import date

import pytest

from rag_orchestrator.config import load_settings
from rag_orchestrator.domain.usage import Price, Prices, UsageLine, build_report
from rag_orchestrator.errors import ConfigError

LINES = [
    UsageLine("2026-11-02", "alice", "cheap", turns=3, tool_calls=1, input_tokens=1_000_000, output_tokens=0),
    UsageLine("2026-11-01", "alice", "dear", turns=1, tool_calls=0, input_tokens=0, output_tokens=500_000),
    UsageLine(
        "2026-11-01", "bob", "dear", turns=2, tool_calls=4, input_tokens=2_000_000, output_tokens=1_000_000
    ),
    UsageLine("2026-11-02", "carol", "unknown", turns=1, tool_calls=0, input_tokens=10, output_tokens=10),
]
PRICES = Prices.parse("cheap=0.1/0.2, dear=3/15")


def test_prices_parse_per_million_tokens_and_name_what_is_wrong():
    assert PRICES.of("dear") == Price(3.0, 15.0) and PRICES.of("other") is None
    assert Prices.parse(None) == Prices.parse("") == Prices()
    for bad, reason in (
        ("dear=3", "model=input/output"),
        ("=1/2", "model=input/output"),
        ("a=1/2,a=3/4", "priced twice"),
        ("a=x/2", "must be a number"),
        ("a=-1/2", "zero or more"),
        ("a=nan/2", "zero or more"),
    ):
        with pytest.raises(ValueError, match=reason):
            Prices.parse(bad)
    with pytest.raises(ConfigError, match="MODEL_PRICES"):
        load_settings(model_prices="dear=3", conversation_storage="memory")


def test_by_caller_prices_each_model_and_puts_the_highest_cost_first():
    report = build_report(LINES, "caller", PRICES, date(2026, 11, 1), date(2026, 11, 2))
    assert [(r.key, r.turns, r.tool_calls, r.estimated_cost) for r in report.rows] == [
        ("bob", 2, 4, 2 * 3 + 1 * 15),  # 21.0
        ("alice", 4, 1, 0.1 + 0.5 * 15),  # 7.6
        ("carol", 1, 0, 0.0),
    ]
    assert report.total.turns == 7 and report.total.estimated_cost == pytest.approx(28.6)
    assert report.unpriced_models == ["unknown"]
    assert report.model_dump(mode="json")["from"] == "2026-11-01"


def test_by_day_is_in_date_order_and_by_model_by_cost():
    by_day = build_report(LINES, "day", PRICES, date(2026, 11, 1), date(2026, 11, 2))
    assert [(r.key, r.input_tokens) for r in by_day.rows] == [
        ("2026-11-01", 2_000_000),
        ("2026-11-02", 1_000_010),
    ]
    by_model = build_report(LINES, "model", PRICES, date(2026, 11, 1), date(2026, 11, 2))
    assert [r.key for r in by_model.rows] == ["dear", "cheap", "unknown"]
    assert build_report([], "model", PRICES, date(2026, 11, 1), date(2026, 11, 1)).rows == []
