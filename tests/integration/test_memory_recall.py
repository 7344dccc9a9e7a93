"""What conversation memory recalls, on a real Chroma server with the offline extractive model: the
knowledge base first, never the turn's own conversation, never an earlier answer quoted, and nothing
of an exchange a regenerate or an edit replaced."""

from __future__ import annotations

import json
import uuid

import pytest

from rag_orchestrator.config import load_settings
from rag_orchestrator.domain.base import utcnow
from rag_orchestrator.retrieval.fragments import conversation_fragments
from rag_orchestrator.tools.base import ToolContext
from tests.integration.features import ask, client, fresh_caller, new_conversation, sse
from tests.integration.knowledge import ingest, rag_search
from tests.integration.knowledge import memory as memory_index

pytestmark = pytest.mark.integration

ERRORS = (
    "What each status means: a 409 error means a turn is already running in this conversation; "
    "wait for it to finish, then send the message again."
)
QUESTION = "What does a 409 error mean?"
DOCUMENT = "[source:errors#0]"


@pytest.fixture
def stack(aws_stack, chroma_url, monkeypatch):
    monkeypatch.setenv("CHROMA_COLLECTION", f"recall-kb-{uuid.uuid4().hex[:12]}")
    monkeypatch.setenv("RAG_SIMILARITY_THRESHOLD", "0.05")
    monkeypatch.setenv("MEMORY_MIN_SCORE", "0.05")
    ingest([{"documentId": "errors", "title": "Errors", "text": ERRORS}], load_settings())
    return client(), fresh_caller()


def answer_of(events) -> dict:
    assert events[-1].event == "Completed", events[-1].data
    return {
        "text": "".join(e.data["content"] for e in events if e.event == "ResponseChunk"),
        "sources": next((e.data["sources"] for e in events if e.event == "Sources"), []),
        "messageId": events[-1].data["messageId"],
    }


def turn_fragments(caller: str, **where: str) -> list[dict]:
    """The caller's turn fragments in Chroma, with their kind and text."""
    store = memory_index(load_settings()).store
    clauses = [{"callerId": caller}, {"kind": {"$in": ["said", "answered"]}}]
    clauses += [{key: value} for key, value in where.items()]
    return [{"kind": r.metadata["kind"], "text": r.document} for r in store.entries({"$and": clauses})]


def test_the_same_question_in_three_conversations_cites_the_document_every_time(stack):
    c, alice = stack
    answers = [answer_of(ask(c, new_conversation(c, alice), QUESTION, alice)) for _ in range(3)]
    for answer in answers:
        assert answer["text"].startswith("What each status means: a 409 error means"), answer["text"]
        assert DOCUMENT in answer["text"] and "conversation:" not in answer["text"]
        assert "Answer:" not in answer["text"]
    # Memory was there to recall: both earlier conversations' fragments, yet only the document is cited.
    assert len(turn_fragments(alice["X-Caller-Id"])) == 6


async def test_recall_puts_the_knowledge_base_first_and_memory_after_it_never_the_own_conversation(stack):
    c, alice = stack
    caller = alice["X-Caller-Id"]
    first, second = new_conversation(c, alice), new_conversation(c, alice)
    ask(c, first, QUESTION, alice)
    ask(c, second, QUESTION, alice)
    tool = rag_search(load_settings())
    found = (await tool.execute({"query": QUESTION}, ToolContext(second, caller))).passages
    assert found[0].document_id == "errors"
    assert [(p.document_id, p.kind) for p in found[1:]] == [
        (f"conversation:{first}", "said"),
        (f"conversation:{first}", "answered"),
    ]  # MEMORY_TOP_K=2 places, and none of the conversation searching
    day = utcnow().strftime("%Y-%m-%d")
    assert [p.title for p in found[1:]] == [
        f"You said on {day}",
        f"An earlier answer of {day}, may be outdated",
    ]
    results = json.loads((await tool.execute({"query": QUESTION}, ToolContext(second, caller))).result)
    assert [r.get("kind") for r in results["results"]] == [None, "said", "answered"]

    temporary = ToolContext(second, caller, memory=False)
    assert [p.document_id for p in (await tool.execute({"query": QUESTION}, temporary)).passages] == [
        "errors"
    ]
    bobs = await tool.execute({"query": QUESTION}, ToolContext(second, fresh_caller()["X-Caller-Id"]))
    assert [p.document_id for p in bobs.passages] == ["errors"]


def test_a_fact_said_in_this_conversation_is_not_recalled_into_it(stack):
    c, alice = stack
    cid = new_conversation(c, alice)
    ask(c, cid, "My locker code is 4711.", alice)
    answer = answer_of(ask(c, cid, "What is my locker code?", alice))
    assert "4711" not in answer["text"]
    assert not [s for s in answer["sources"] if s["documentId"].startswith("conversation:")]


def test_an_earlier_answer_is_never_quoted_and_what_was_said_is_quoted_with_its_date(stack):
    c, alice = stack
    caller, elsewhere, when = alice["X-Caller-Id"], str(uuid.uuid4()), utcnow()
    said, answered = conversation_fragments(
        conversation_id=elsewhere,
        caller_id=caller,
        message_id="01JX0000000000000000000000",
        question="My vault code is 8080.",
        answer="The vault opens at seven every morning.",
        created_at=when,
    )
    memory_index(load_settings()).add([answered])
    vault = answer_of(ask(c, new_conversation(c, alice), "When does the vault open?", alice))
    assert "seven" not in vault["text"] and vault["text"].startswith("I could not find")

    memory_index(load_settings()).add([said])
    code = answer_of(ask(c, new_conversation(c, alice), "What is my vault code?", alice))
    assert (
        code["text"]
        == f"You said on {when:%Y-%m-%d}: My vault code is 8080. [source:{said.document_id}#{said.index}]"
    )


def test_regenerate_and_edit_remove_the_replaced_exchanges_fragments(stack):
    c, alice = stack
    caller, cid = alice["X-Caller-Id"], new_conversation(c, alice)
    first = answer_of(ask(c, cid, "My locker code is 4711.", alice))
    regenerated = answer_of(sse(c, f"{cid}/messages/{first['messageId']}/regenerate", None, alice))
    kept = turn_fragments(caller, conversationId=cid)
    assert sorted(f["kind"] for f in kept) == ["answered", "said"]
    assert turn_fragments(caller, messageId=first["messageId"]) == []
    assert len(turn_fragments(caller, messageId=regenerated["messageId"])) == 2

    question = next(
        m["messageId"]
        for m in c.get(f"/api/v1/chat/conversations/{cid}/messages", headers=alice).json()["items"]
        if m["role"] == "user"
    )
    edit = {"message": "My locker code is 1234."}
    edited = answer_of(sse(c, f"{cid}/messages/{question}/edit", edit, alice))
    assert {f["text"] for f in turn_fragments(caller, conversationId=cid, kind="said")} == {edit["message"]}
    assert turn_fragments(caller, messageId=regenerated["messageId"]) == []
    assert len(turn_fragments(caller, messageId=edited["messageId"])) == 2

    later = answer_of(ask(c, new_conversation(c, alice), "What is my locker code?", alice))
    assert "1234" in later["text"] and "4711" not in later["text"]
