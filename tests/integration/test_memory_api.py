"""The caller's control over memory, through the app on a real Chroma server and the moto server: list
(newest first, best match for q, pages), forget one, forget all, temporary chats; never another
caller's fragments; every refusal with the error JSON."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from rag_orchestrator.config import load_settings
from rag_orchestrator.domain.base import utcnow
from rag_orchestrator.domain.ids import sortable_id
from rag_orchestrator.retrieval.fragments import conversation_fragments
from tests.integration.features import BASE, ask, assert_error, client, fresh_caller, new_conversation
from tests.integration.knowledge import memory as memory_index

pytestmark = pytest.mark.integration

MEMORY = "/api/v1/memory"
EXCHANGES = [
    ("My locker code is 4711.", "Noted."),
    ("I prefer invoices by email.", "Invoices will go by email."),
    ("My dog is called Rex.", "A fine name."),
]


@pytest.fixture
def app(aws_stack, chroma_url, monkeypatch):
    monkeypatch.setenv("CHROMA_COLLECTION", f"memory-api-kb-{uuid.uuid4().hex[:12]}")
    monkeypatch.setenv("RAG_SIMILARITY_THRESHOLD", "0.05")
    monkeypatch.setenv("MEMORY_MIN_SCORE", "0.05")
    return client()


def remember(caller: dict[str, str], exchanges=EXCHANGES) -> list[str]:
    """Each exchange as one turn of a conversation of its own, a minute apart; the answers' ids."""
    start, ids, fragments = utcnow() - timedelta(hours=1), [], []
    for minute, (said, answered) in enumerate(exchanges):
        ids.append(sortable_id())
        fragments += conversation_fragments(
            conversation_id=str(uuid.uuid4()),
            caller_id=caller["X-Caller-Id"],
            message_id=ids[-1],
            question=said,
            answer=answered,
            created_at=start + timedelta(minutes=minute),
        )
    memory_index(load_settings()).add(fragments)
    return ids


def listed(app, caller, **params) -> dict:
    response = app.get(MEMORY, params=params, headers=caller)
    assert response.status_code == 200, response.text
    return response.json()


def test_the_list_is_the_callers_own_newest_first_in_pages(app):
    alice, bob = fresh_caller(), fresh_caller()
    answers = remember(alice)
    remember(bob, [("Bob's secret is 99.", "Kept.")])
    first = listed(app, alice, limit="4")
    assert [i["fragmentId"] for i in first["items"]] == [
        f"{kind}-{answer}" for answer in reversed(answers[1:]) for kind in ("answered", "said")
    ]
    item = first["items"][1]
    assert set(item) == {"fragmentId", "kind", "text", "conversationId", "createdAt"}
    assert (item["kind"], item["text"]) == ("said", "My dog is called Rex.")
    rest = listed(app, alice, limit="4", cursor=first["nextCursor"])
    assert [i["text"] for i in rest["items"]] == ["Noted.", "My locker code is 4711."]
    assert rest["nextCursor"] is None
    assert "Bob" not in str(first) + str(rest)
    assert listed(app, bob)["items"][0]["text"] in {"Bob's secret is 99.", "Kept."}


def test_q_lists_the_best_match_first(app):
    alice = fresh_caller()
    remember(alice)
    found = listed(app, alice, q="what is my dog called")
    assert found["items"][0]["text"] == "My dog is called Rex."


def test_refusals_carry_the_error_json(app):
    alice = fresh_caller()
    remember(alice)
    assert_error(app.get(MEMORY, params={"cursor": "not-a-cursor"}, headers=alice), 400)
    mine = listed(app, alice, limit="1")
    bob = fresh_caller()
    assert_error(app.get(MEMORY, params={"cursor": mine["nextCursor"]}, headers=bob), 400)  # not his
    assert_error(app.get(MEMORY, params={"limit": "0"}, headers=alice), 422)
    assert_error(app.get(MEMORY, params={"q": ""}, headers=alice), 422)
    assert_error(app.delete(f"{MEMORY}/nonsense", headers=alice), 404)
    assert_error(app.delete(f"{MEMORY}/said-{sortable_id()}", headers=alice), 404)
    assert_error(app.get(MEMORY), 401)
    assert_error(app.delete(MEMORY), 401)


def test_forget_one_and_another_callers_fragment_is_a_404(app):
    alice, bob = fresh_caller(), fresh_caller()
    [answer, *_] = remember(alice)
    fragment = f"said-{answer}"
    assert_error(app.delete(f"{MEMORY}/{fragment}", headers=bob), 404)
    assert fragment in {i["fragmentId"] for i in listed(app, alice)["items"]}  # still there
    assert app.delete(f"{MEMORY}/{fragment}", headers=alice).status_code == 204
    left = {i["fragmentId"] for i in listed(app, alice)["items"]}
    assert fragment not in left and f"answered-{answer}" in left and len(left) == 5
    assert_error(app.delete(f"{MEMORY}/{fragment}", headers=alice), 404)


def test_forget_all_forgets_only_the_callers(app):
    alice, bob = fresh_caller(), fresh_caller()
    remember(alice)
    remember(bob)
    response = app.delete(MEMORY, headers=alice)
    assert response.status_code == 202
    assert listed(app, alice)["items"] == []
    assert len(listed(app, bob)["items"]) == 6
    assert app.delete(MEMORY, headers=alice).status_code == 202  # nothing left: still accepted


def test_a_temporary_chat_remembers_nothing_and_recalls_nothing(app):
    alice = fresh_caller()
    remember(alice)
    created = app.post(BASE, json={"memory": False}, headers=alice)
    assert created.status_code == 201 and created.json()["memory"] is False
    cid = created.json()["conversationId"]
    events = ask(app, cid, "What is my locker code?", alice)
    answer = "".join(e.data["content"] for e in events if e.event == "ResponseChunk")
    assert "4711" not in answer
    assert app.get(f"{BASE}/{cid}", headers=alice).json()["memory"] is False
    assert {i["conversationId"] for i in listed(app, alice)["items"]}.isdisjoint({cid})
    assert len(listed(app, alice)["items"]) == 6  # nothing of the temporary chat's turn

    ordinary = new_conversation(app, alice)
    recalled = ask(app, ordinary, "What is my locker code?", alice)
    assert "4711" in "".join(e.data["content"] for e in recalled if e.event == "ResponseChunk")


def test_patch_makes_a_chat_temporary_and_forgets_what_it_had_said(app):
    alice = fresh_caller()
    cid = new_conversation(app, alice)
    ask(app, cid, "My locker code is 4711.", alice)
    assert {i["conversationId"] for i in listed(app, alice)["items"]} == {cid}
    for wrong in ("no", 0, None, [False]):
        assert_error(app.patch(f"{BASE}/{cid}", json={"memory": wrong}, headers=alice), 422)
    patched = app.patch(f"{BASE}/{cid}", json={"memory": False}, headers=alice)
    assert patched.status_code == 200 and patched.json()["memory"] is False
    assert listed(app, alice)["items"] == []
    ask(app, cid, "My dog is called Rex.", alice)
    assert listed(app, alice)["items"] == []
    assert_error(app.patch(f"{BASE}/{cid}", json={"memory": False}, headers=fresh_caller()), 404)
    back = app.patch(f"{BASE}/{cid}", json={"memory": True}, headers=alice)
    assert back.json()["memory"] is True
    ask(app, cid, "My cat is called Tom.", alice)
    assert {i["text"] for i in listed(app, alice)["items"]} >= {"My cat is called Tom."}
