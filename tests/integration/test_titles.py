"""Titles through the app on the moto server: given on create and PATCH, written after the first turn
(by the fake LLM over HTTP, or cut from the question with the extractive strategy), searched with ?q=."""

from __future__ import annotations

import pytest

from tests.fakes.llm_script import error_reply, text_reply
from tests.integration.features import (
    ALICE,
    BASE,
    BOB,
    ask,
    assert_error,
    client,
    fresh_caller,
    new_conversation,
    use_fake_llm,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def stack(aws_stack, chroma_url, monkeypatch):
    monkeypatch.setenv("AUTO_TITLE", "true")


def title_of(c, cid: str) -> str | None:
    return c.get(f"{BASE}/{cid}", headers=ALICE).json()["title"]


def test_a_title_on_create_is_read_and_listed_and_bad_titles_are_refused(stack):
    c, carol = client(), fresh_caller()
    cid = new_conversation(c, carol, title="  Opening hours  ")
    assert c.get(f"{BASE}/{cid}", headers=carol).json()["title"] == "Opening hours"
    listed = c.get(BASE, headers=carol).json()["items"]
    assert [(i["conversationId"], i["title"]) for i in listed] == [(cid, "Opening hours")]
    assert_error(c.post(BASE, json={"title": "x" * 121}, headers=carol), 422)
    assert_error(c.post(BASE, json={"title": "   "}, headers=carol), 422)
    assert len(c.get(BASE, headers=carol).json()["items"]) == 1  # nothing half-created


def test_patch_renames_for_the_owner_only(stack):
    c = client()
    cid = new_conversation(c, metadata={"channel": "web"})
    renamed = c.patch(f"{BASE}/{cid}", json={"title": "Refunds"}, headers=ALICE)
    assert renamed.status_code == 200 and renamed.json()["title"] == "Refunds"
    assert renamed.json()["metadata"] == {"channel": "web"}  # left out: kept
    both = c.patch(f"{BASE}/{cid}", json={"metadata": {"channel": "app"}}, headers=ALICE).json()
    assert (both["title"], both["metadata"]) == ("Refunds", {"channel": "app"})
    assert_error(c.patch(f"{BASE}/{cid}", json={"title": "Mine"}, headers=BOB), 404)
    assert_error(c.patch(f"{BASE}/{cid}", json={"title": "y" * 121}, headers=ALICE), 422)
    assert_error(c.patch(f"{BASE}/{cid}", json={"title": ""}, headers=ALICE), 422)
    assert_error(c.patch(f"{BASE}/{cid}", json={}, headers=ALICE), 422)
    assert_error(c.patch(f"{BASE}/{cid}", json={"title": "x", "userId": "u"}, headers=ALICE), 422)
    assert title_of(c, cid) == "Refunds"


def test_the_model_titles_a_conversation_after_its_first_turn(stack, fake_llm, monkeypatch):
    use_fake_llm(fake_llm, monkeypatch)
    fake_llm.script(text_reply("Refunds take 14 days."), text_reply('"Refund delays."'))
    c = client()
    cid = new_conversation(c)
    events = ask(c, cid, "How long do refunds take?")
    assert events[-1].event == "Completed"
    assert title_of(c, cid) == "Refund delays"
    title_call = fake_llm.requests[-1]
    assert title_call["max_tokens"] == 32 and "tools" not in title_call
    assert "How long do refunds take?" in title_call["messages"][-1]["content"]
    # the second turn asks for no title
    fake_llm.script(text_reply("Yes."))
    ask(c, cid, "Even abroad?")
    assert len(fake_llm.requests) == 3 and title_of(c, cid) == "Refund delays"


def test_a_failing_title_call_falls_back_to_the_question(stack, fake_llm, monkeypatch):
    use_fake_llm(fake_llm, monkeypatch)
    fake_llm.script(text_reply("Sure."), error_reply(500, "upstream broke"))
    c = client()
    cid = new_conversation(c)
    ask(c, cid, "can you explain how the archival job moves old conversations to S3? thanks")
    assert title_of(c, cid) == "Can you explain how the archival job moves old…"


def test_the_extractive_strategy_titles_with_the_question(stack, monkeypatch):
    monkeypatch.setenv("MODEL_STRATEGY", "extractive")
    c = client()
    cid = new_conversation(c)
    ask(c, cid, "What port does the dev server use? I tried 8080.")
    assert title_of(c, cid) == "What port does the dev server use?"


def test_a_title_given_by_the_owner_is_kept(stack, monkeypatch):
    monkeypatch.setenv("MODEL_STRATEGY", "extractive")
    c = client()
    cid = new_conversation(c, title="Mine")
    ask(c, cid, "What port does the dev server use?")
    assert title_of(c, cid) == "Mine"


def test_q_filters_the_callers_conversations_by_title_words_and_pages(stack):
    c, carol = client(), fresh_caller()
    for title in ["Refund for order 12", "Café hours", "Opening a REFUND", "Shipping", "Refundable fees"]:
        new_conversation(c, carol, title=title)
    new_conversation(c, BOB, title="Refund for Bob")
    new_conversation(c, carol)

    def search(q: str, limit: int = 2) -> list[str]:
        titles, cursor = [], None
        while True:
            params = {"q": q, "limit": str(limit)} | ({"cursor": cursor} if cursor else {})
            page = c.get(BASE, params=params, headers=carol).json()
            titles += [i["title"] for i in page["items"]]
            if not (cursor := page["nextCursor"]):
                return titles

    assert search("refund") == ["Refundable fees", "Opening a REFUND", "Refund for order 12"]
    assert search("REFUND order") == ["Refund for order 12"]
    assert search("cafe") == search("CAFÉ") == ["Café hours"]
    assert search("nothing") == []
    assert_error(c.get(BASE, params={"q": "?!"}, headers=carol), 400)
    assert_error(c.get(BASE, params={"q": "x" * 201}, headers=carol), 422)
