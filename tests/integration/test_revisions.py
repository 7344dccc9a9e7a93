"""Regenerate and edit through the app on the moto server with the fake LLM over HTTP: versions kept
and listed, the model sent only the latest versions, counters and the audit chain exact, every
refusal before the stream starts, and nothing written by a revision that fails."""

from __future__ import annotations

import httpx
import pytest

from rag_orchestrator.api.app import STREAM_ROUTERS
from tests.fakes.llm_script import error_reply, text_reply
from tests.fakes.sse import parse_sse
from tests.integration.features import (
    ADMIN,
    BASE,
    ask,
    assert_error,
    client,
    fresh_caller,
    new_conversation,
    sse,
    transcript,
    use_fake_llm,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def chat(aws_stack, chroma_url, fake_llm, monkeypatch):
    """The streaming function's app, a caller of the test's own and a conversation of two exchanges."""
    use_fake_llm(fake_llm, monkeypatch)
    fake_llm.script(text_reply("Fourteen days."), text_reply("Answer B1."))
    c, alice = client((*STREAM_ROUTERS, "conversations")), fresh_caller()
    cid = new_conversation(c, alice)
    ask(c, cid, "How long do refunds take?", alice)
    ask(c, cid, "And for orders abroad?", alice)
    return c, alice, cid


def revise(c, alice, cid: str, message_id: str, action: str, body=None):
    events = sse(c, f"{cid}/messages/{message_id}/{action}", body, alice)
    assert events[-1].event == "Completed", events[-1]
    return events


def sent_to_model(request: dict) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in request["messages"] if m["role"] != "system"]


def test_regenerate_twice_keeps_three_answers_and_the_model_sees_only_the_latest(chat, fake_llm):
    c, alice, cid = chat
    last_answer = transcript(c, cid, alice)[-1]["messageId"]
    fake_llm.script(text_reply("Answer B2."), text_reply("Answer B3."))
    second = revise(c, alice, cid, last_answer, "regenerate")
    answer_b2 = second[-1].data["messageId"]
    third = revise(c, alice, cid, answer_b2, "regenerate")  # through the new answer this time
    answer_b3 = third[-1].data["messageId"]
    assert "".join(e.data["content"] for e in third if e.event == "ResponseChunk") == "Answer B3."

    latest = transcript(c, cid, alice)
    assert [m["content"] for m in latest] == [
        "How long do refunds take?",
        "Fourteen days.",
        "And for orders abroad?",
        "Answer B3.",
    ]
    assert all(m["supersededBy"] is None for m in latest)
    every = transcript(c, cid, alice, versions="all")
    answers = [m for m in every if m["role"] == "assistant" and m["content"].startswith("Answer")]
    assert [(m["content"], m.get("supersededBy")) for m in answers] == [
        ("Answer B1.", answer_b2),
        ("Answer B2.", answer_b3),
        ("Answer B3.", None),
    ]
    assert sent_to_model(fake_llm.requests[-1]) == [
        ("user", "How long do refunds take?"),
        ("assistant", "Fourteen days."),
        ("user", "And for orders abroad?"),
    ]
    conversation = c.get(f"{BASE}/{cid}", headers=alice).json()
    assert conversation["messageCount"] == len(latest) == 4


def test_edit_replaces_the_question_and_its_answer(chat, fake_llm):
    c, alice, cid = chat
    old_question, old_answer = transcript(c, cid, alice)[-2:]
    fake_llm.script(text_reply("Twenty days abroad."))
    events = revise(
        c, alice, cid, old_question["messageId"], "edit", {"message": "And for orders to Norway?"}
    )
    new_answer = events[-1].data["messageId"]
    latest = transcript(c, cid, alice)
    assert [m["content"] for m in latest[2:]] == ["And for orders to Norway?", "Twenty days abroad."]
    every = {m["messageId"]: m for m in transcript(c, cid, alice, versions="all")}
    assert every[old_question["messageId"]]["supersededBy"] == latest[2]["messageId"]
    assert every[old_answer["messageId"]]["supersededBy"] == new_answer
    assert sent_to_model(fake_llm.requests[-1])[-2:] == [
        ("assistant", "Fourteen days."),
        ("user", "And for orders to Norway?"),
    ]
    assert c.get(f"{BASE}/{cid}", headers=alice).json()["messageCount"] == 4


def test_the_audit_chain_holds_every_revision(chat, fake_llm):
    c, alice, cid = chat
    answer = transcript(c, cid, alice)[-1]["messageId"]
    fake_llm.script(text_reply("Answer B2."))
    revise(c, alice, cid, answer, "regenerate")
    audit = client().get("/api/v1/admin/audit", params={"conversationId": cid}, headers=ADMIN).json()
    assert audit["chainValid"] is True
    assert [r.get("revision") for r in audit["records"]] == [None, None, "regenerate"]
    assert audit["records"][-1]["supersedes"] == [answer]


def test_only_the_last_exchange_and_only_the_owner(chat):
    c, alice, cid = chat
    first_question, first_answer, question, answer = transcript(c, cid, alice)
    url = f"{BASE}/{cid}/messages"
    for earlier in (first_question, first_answer):
        refused = assert_error(c.post(f"{url}/{earlier['messageId']}/regenerate", headers=alice), 409)
        assert "last exchange" in refused["message"]
        assert_error(c.post(f"{url}/{earlier['messageId']}/edit", json={"message": "x"}, headers=alice), 409)
    assert_error(c.post(f"{url}/{answer['messageId']}/regenerate", headers=fresh_caller()), 404)
    assert_error(
        c.post(f"{url}/{question['messageId']}/edit", json={"message": "x"}, headers=fresh_caller()), 404
    )
    assert_error(c.post(f"{url}/01JZZZZZZZZZZZZZZZZZZZZZZZ/regenerate", headers=alice), 404)
    assert_error(c.post(f"{url}/nonsense/regenerate", headers=alice), 404)
    for blank in ({"message": "   "}, {"message": ""}, {}, {"message": "x", "clientMessageId": "c1"}):
        assert_error(c.post(f"{url}/{question['messageId']}/edit", json=blank, headers=alice), 422)
    assert_error(c.post(f"{url}/{answer['messageId']}/regenerate", json={"bogus": 1}, headers=alice), 422)
    # nothing was written, and no refusal kept the turn lock
    assert transcript(c, cid, alice, versions="all") == [first_question, first_answer, question, answer]
    assert c.get(f"{BASE}/{cid}", headers=alice).json()["messageCount"] == 4


def test_an_edit_naming_a_file_it_cannot_have_is_refused_before_anything_is_written(chat):
    c, alice, cid = chat
    before = transcript(c, cid, alice, versions="all")
    question = before[-2]
    unknown = {"message": "And with this receipt?", "attachmentIds": ["0b6f2d1e-5c4a-4e8b-9a7d-2f1e3c4b5a69"]}
    url = f"{BASE}/{cid}/messages/{question['messageId']}/edit"
    assert_error(c.post(url, json=unknown, headers=alice), 404)
    assert transcript(c, cid, alice, versions="all") == before  # nothing written, the lock not kept
    assert c.get(f"{BASE}/{cid}", headers=alice).json()["messageCount"] == 4


def test_a_revision_that_fails_leaves_the_exchange_as_it_was(chat, fake_llm):
    c, alice, cid = chat
    before = transcript(c, cid, alice, versions="all")
    counted = c.get(f"{BASE}/{cid}", headers=alice).json()["messageCount"]
    fake_llm.script(error_reply(400, "bad request upstream"), error_reply(400, "bad request upstream"))
    failed = sse(c, f"{cid}/messages/{before[-1]['messageId']}/regenerate", None, alice)
    assert failed[-1].event == "Error"
    failed = sse(c, f"{cid}/messages/{before[-2]['messageId']}/edit", {"message": "Edited?"}, alice)
    assert failed[-1].event == "Error"
    assert transcript(c, cid, alice, versions="all") == before
    assert c.get(f"{BASE}/{cid}", headers=alice).json()["messageCount"] == counted
    fake_llm.script(text_reply("Works again."))
    revise(c, alice, cid, before[-1]["messageId"], "regenerate")  # the lock was released


@pytest.mark.parametrize("dev_app", ["model"], indirect=True)
def test_the_dev_app_streams_a_regenerate(dev_app):
    """As `make dev` serves it, over real HTTP."""
    alice = fresh_caller()
    dev_app.llm.script(text_reply("First."), text_reply("Second."))
    with httpx.Client(base_url=dev_app.url, headers=alice, timeout=30) as http:
        cid = http.post(BASE, json={}).json()["conversationId"]
        http.post(dev_app.conversation_url(cid, "messages/stream"), json={"message": "Hello?"}).read()
        answer = http.get(dev_app.conversation_url(cid, "messages")).json()["items"][-1]["messageId"]
        response = http.post(dev_app.conversation_url(cid, f"messages/{answer}/regenerate"))
        events = parse_sse(response.text)
        assert response.headers["content-type"].startswith("text/event-stream")
        assert events[-1].event == "Completed" and events[0].data["turnId"]
        every = http.get(dev_app.conversation_url(cid, "messages"), params={"versions": "all"}).json()[
            "items"
        ]
        assert [m["content"] for m in every] == ["Hello?", "First.", "Second."]
