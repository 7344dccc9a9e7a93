"""Feedback through the app on the moto server: rate an answer, replace, remove, read it on the
message, count it in metrics (EMF), and list it as an admin; every bad input refused."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from rag_orchestrator.domain.base import utcnow
from rag_orchestrator.observability import metrics
from tests.fakes.llm_script import text_reply
from tests.integration.features import (
    ADMIN,
    BASE,
    ask,
    assert_error,
    client,
    fresh_caller,
    new_conversation,
    transcript,
    use_fake_llm,
)

pytestmark = pytest.mark.integration
ADMIN_FEEDBACK = "/api/v1/admin/feedback"


@pytest.fixture
def answered(aws_stack, chroma_url, fake_llm, monkeypatch):
    """A caller of the test's own, a conversation with one answered turn, its question and answer ids."""
    use_fake_llm(fake_llm, monkeypatch)
    fake_llm.script(text_reply("Refunds take 14 days."))
    c, alice = client(), fresh_caller()
    cid = new_conversation(c, alice)
    ask(c, cid, "How long do refunds take?", alice)
    question, answer = transcript(c, cid, alice)
    return c, alice, cid, question["messageId"], answer["messageId"]


def feedback_url(cid: str, message_id: str) -> str:
    return f"{BASE}/{cid}/messages/{message_id}/feedback"


def test_feedback_is_put_replaced_shown_and_removed(answered, capsys, monkeypatch):
    c, alice, cid, _, answer = answered
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    metrics.clear_metrics()
    capsys.readouterr()
    first = c.put(feedback_url(cid, answer), json={"rating": "down", "comment": "too vague"}, headers=alice)
    assert first.status_code == 200 and first.json()["rating"] == "down"
    emf = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    assert [r.get("FeedbackDown") for r in emf] == [[1.0]]
    second = {"rating": "up", "category": "accurate"}
    assert c.put(feedback_url(cid, answer), json=second, headers=alice).status_code == 200
    shown = transcript(c, cid, alice)[1]["feedback"]
    assert (shown["rating"], shown.get("comment"), shown["category"]) == ("up", None, "accurate")
    assert c.delete(feedback_url(cid, answer), headers=alice).status_code == 204
    assert transcript(c, cid, alice)[1].get("feedback") is None
    assert c.delete(feedback_url(cid, answer), headers=alice).status_code == 204  # nothing left: still 204


def test_feedback_refuses_bad_input_and_writes_nothing(answered):
    c, alice, cid, question, answer = answered
    assert_error(c.put(feedback_url(cid, question), json={"rating": "up"}, headers=alice), 404)
    assert_error(
        c.put(feedback_url(cid, "01JZZZZZZZZZZZZZZZZZZZZZZZ"), json={"rating": "up"}, headers=alice), 404
    )
    assert_error(c.put(feedback_url(cid, "not-a-message"), json={"rating": "up"}, headers=alice), 404)
    assert_error(c.put(feedback_url(cid, answer), json={"rating": "up"}, headers=fresh_caller()), 404)
    assert_error(c.delete(feedback_url(cid, answer), headers=fresh_caller()), 404)
    for bad in (
        {"rating": "meh"},
        {"rating": 1},
        {},
        {"rating": "up", "comment": "x" * 2001},
        {"rating": "up", "x": 1},
    ):
        assert_error(c.put(feedback_url(cid, answer), json=bad, headers=alice), 422)
    assert all(m.get("feedback") is None for m in transcript(c, cid, alice))


def test_admins_list_feedback_newest_first_by_rating_and_in_pages(answered, fake_llm):
    c, alice, cid, _, answer = answered
    since = (utcnow() - timedelta(seconds=5)).isoformat()
    fake_llm.script(text_reply("One."), text_reply("Two."))
    for question in ("And abroad?", "And online?"):
        ask(c, cid, question, alice)
    later = [m["messageId"] for m in transcript(c, cid, alice)[3::2]]
    c.put(feedback_url(cid, answer), json={"rating": "down", "comment": "stale"}, headers=alice)
    for message_id in later:
        c.put(feedback_url(cid, message_id), json={"rating": "up"}, headers=alice)
    listed = c.get(ADMIN_FEEDBACK, params={"since": since}, headers=ADMIN)
    assert listed.status_code == 200, listed.text
    mine = [e for e in listed.json()["items"] if e["callerId"] == alice["X-Caller-Id"]]
    assert [(e["conversationId"], e["messageId"], e["rating"], e.get("comment")) for e in mine] == [
        (cid, later[1], "up", None),
        (cid, later[0], "up", None),
        (cid, answer, "down", "stale"),
    ]
    downs = c.get(ADMIN_FEEDBACK, params={"since": since, "rating": "down"}, headers=ADMIN).json()["items"]
    assert {e["rating"] for e in downs} == {"down"} and answer in [e["messageId"] for e in downs]
    ups = c.get(ADMIN_FEEDBACK, params={"since": since, "rating": "up"}, headers=ADMIN).json()["items"]
    assert answer not in [e["messageId"] for e in ups]
    # paging: every rating since, newest first, each once
    seen, cursor = [], None
    while True:
        params = {"since": since, "limit": "1"} | ({"cursor": cursor} if cursor else {})
        page = c.get(ADMIN_FEEDBACK, params=params, headers=ADMIN).json()
        seen += page["items"]
        if not (cursor := page["nextCursor"]):
            break
    assert [e["messageId"] for e in seen] == [e["messageId"] for e in listed.json()["items"]]
    times = [e["updatedAt"] for e in seen]
    assert times == sorted(times, reverse=True)


def test_the_admin_listing_is_for_admins_and_checks_its_parameters(answered):
    c, alice, *_ = answered
    assert_error(c.get(ADMIN_FEEDBACK, headers=alice), 403)
    assert_error(c.get(ADMIN_FEEDBACK, headers=fresh_caller("moderator")), 403)
    assert_error(c.get(ADMIN_FEEDBACK, params={"rating": "meh"}, headers=ADMIN), 422)
    assert_error(c.get(ADMIN_FEEDBACK, params={"since": "yesterday"}, headers=ADMIN), 422)
    old = (utcnow() - timedelta(days=93)).isoformat()
    assert_error(c.get(ADMIN_FEEDBACK, params={"since": old}, headers=ADMIN), 400)
    assert_error(c.get(ADMIN_FEEDBACK, params={"cursor": "forged.cursor"}, headers=ADMIN), 400)
    # Valid, though its UTC is past what datetime holds: "since the end of time" lists nothing.
    late = c.get(ADMIN_FEEDBACK, params={"since": "9999-12-31T23:59:59-14:00"}, headers=ADMIN)
    assert late.status_code == 200 and late.json()["items"] == [], late.text
    assert c.get(ADMIN_FEEDBACK, headers=ADMIN).status_code == 200
