"""GET /api/v1/admin/usage over real turns on the moto server: what each turn spent is counted in its
finishing write per day, caller and model, grouped by caller, day or model and priced with
MODEL_PRICES; admins only; every bad query refused with 422."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.fakes.llm_script import text_reply, tool_call_reply
from tests.integration.features import (
    ADMIN,
    ask,
    assert_error,
    client,
    fresh_caller,
    new_conversation,
    use_fake_llm,
)

pytestmark = pytest.mark.integration
USAGE = "/api/v1/admin/usage"
PRICES = (
    "fake-model=1000/2000,other-model=1/1"  # per million tokens: 0.001 an input token, 0.002 an output one
)


@pytest.fixture
def turns(aws_stack, chroma_url, fake_llm, monkeypatch):
    """Alice: a plain turn (11 in, 7 out) and a tool-using one (20+11 in, 9+7 out, one call); Bob: one plain turn."""
    use_fake_llm(fake_llm, monkeypatch)
    monkeypatch.setenv("AUTO_TITLE", "false")  # no title call between the turns' scripted replies
    monkeypatch.setenv("MODEL_PRICES", PRICES)
    c, alice, bob = client(), fresh_caller(), fresh_caller()
    before = {group: report(c, groupBy=group) for group in ("day", "model")}
    fake_llm.script(
        text_reply("Hello."),
        tool_call_reply("rag_search", {"query": "refunds"}, call_id="call_a"),
        text_reply("Refunds take 14 days."),
        text_reply("Hi Bob."),
    )
    first = new_conversation(c, alice)
    ask(c, first, "Hello?", alice)
    ask(c, first, "How long do refunds take?", alice)
    ask(c, new_conversation(c, bob), "Hello?", bob)
    return c, alice["X-Caller-Id"], bob["X-Caller-Id"], before


def report(c: Any, **query: str) -> dict[str, Any]:
    response = c.get(USAGE, params=query, headers=ADMIN)
    assert response.status_code == 200, response.text
    return response.json()


def row(found: dict[str, Any], key: str) -> dict[str, Any]:
    return next(
        (r for r in found["rows"] if r["key"] == key), {"turns": 0, "inputTokens": 0, "outputTokens": 0}
    )


def test_by_caller_counts_each_callers_turns_and_prices_them(turns):
    c, alice, bob, _ = turns
    found = report(c)  # groupBy=caller, this month so far
    today = datetime.now(UTC).date()
    assert (found["from"], found["to"], found["groupBy"]) == (
        today.replace(day=1).isoformat(),
        today.isoformat(),
        "caller",
    )
    mine = [r for r in found["rows"] if r["key"] in (alice, bob)]
    assert mine == [
        {
            "key": alice,
            "turns": 2,
            "toolCalls": 1,
            "inputTokens": 11 + 20 + 11,
            "outputTokens": 7 + 9 + 7,
            "estimatedCost": pytest.approx((42 * 1000 + 23 * 2000) / 1_000_000),
        },
        {
            "key": bob,
            "turns": 1,
            "toolCalls": 0,
            "inputTokens": 11,
            "outputTokens": 7,
            "estimatedCost": pytest.approx((11 * 1000 + 7 * 2000) / 1_000_000),
        },
    ]  # the higher cost first
    costs = [r["estimatedCost"] for r in found["rows"]]
    assert costs == sorted(costs, reverse=True)
    total = found["total"]
    assert total["key"] == "total" and total["turns"] == sum(r["turns"] for r in found["rows"])
    assert total["estimatedCost"] == pytest.approx(sum(costs), abs=1e-5)
    assert "fake-model" not in found["unpricedModels"]


def test_by_day_and_by_model_add_the_turns_to_today_and_to_the_model(turns):
    c, _, _, before = turns
    today = datetime.now(UTC).date().isoformat()
    by_day = report(c, groupBy="day", **{"from": today, "to": today})
    assert [r["key"] for r in by_day["rows"]] == [today]
    grown = {
        k: row(by_day, today)[k] - row(before["day"], today)[k]
        for k in ("turns", "inputTokens", "outputTokens")
    }
    assert grown == {"turns": 3, "inputTokens": 53, "outputTokens": 30}
    by_model = report(c, groupBy="model")
    model, earlier = row(by_model, "fake-model"), row(before["model"], "fake-model")
    assert model["turns"] - earlier["turns"] == 3
    assert model["estimatedCost"] == pytest.approx(
        (model["inputTokens"] * 1000 + model["outputTokens"] * 2000) / 1_000_000
    )
    yesterday = (datetime.now(UTC).date() - timedelta(days=1)).isoformat()
    assert report(c, groupBy="day", **{"from": yesterday, "to": yesterday})["rows"] == []


def test_unpriced_models_cost_nothing_and_are_named(turns, monkeypatch):
    monkeypatch.setenv("MODEL_PRICES", "other-model=1/1")
    found = report(client(), groupBy="model")
    assert row(found, "fake-model")["estimatedCost"] == 0
    assert "fake-model" in found["unpricedModels"]


def test_only_admins_read_the_report_and_bad_queries_are_refused(turns):
    c, *_ = turns
    for caller in (fresh_caller(), fresh_caller("mod"), fresh_caller("user")):
        assert_error(c.get(USAGE, headers=caller), 403)
    today = datetime.now(UTC).date()
    for bad in (
        {"groupBy": "user"},
        {"from": "2026-13-01"},
        {"to": "yesterday"},
        {"from": today.isoformat(), "to": (today - timedelta(days=1)).isoformat()},
        {"from": (today - timedelta(days=92)).isoformat(), "to": today.isoformat()},
        {"since": today.isoformat()},
    ):
        assert_error(c.get(USAGE, params=bad, headers=ADMIN), 422)


@pytest.mark.parametrize(
    "query",
    [
        {"from": "9999-12-31", "to": "9999-12-31"},
        {"to": "9999-12-31"},
        {"from": "9999-12-30", "to": "9999-12-31", "groupBy": "day"},
    ],
)
def test_the_last_days_of_the_calendar_are_an_empty_report(aws_stack, query):
    response = client().get(USAGE, params=query, headers=ADMIN)
    assert response.status_code == 200, response.text
    assert response.json()["rows"] == []
