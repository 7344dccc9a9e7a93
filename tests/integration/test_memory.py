"""Conversation memory on a real Chroma server, through the app: what a turn indexes, who finds it, deletion."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient

from rag_orchestrator.api.app import ALL_ROUTERS, create_app
from rag_orchestrator.config import load_settings
from rag_orchestrator.domain.base import utcnow
from rag_orchestrator.retrieval.fragments import attachment_segment
from rag_orchestrator.tools.base import ToolContext
from tests.fakes.llm_script import text_reply
from tests.fakes.sse import parse_sse
from tests.integration.knowledge import ingest, memory, rag_search

pytestmark = pytest.mark.integration

ALICE = {"X-Caller-Id": "alice"}
BOB = {"X-Caller-Id": "bob"}
FACT = "My locker code is 4711."
QUESTION = "What is my locker code?"
GUIDE = "The dev server starts with make dev and listens on port 8000 by default."


@pytest.fixture
def stack(aws_stack, chroma_url, monkeypatch):
    monkeypatch.setenv("CHROMA_COLLECTION", f"memory-kb-{uuid.uuid4().hex[:12]}")
    monkeypatch.setenv("RAG_SIMILARITY_THRESHOLD", "0.05")
    monkeypatch.setenv("MEMORY_MIN_SCORE", "0.05")
    ingest([{"documentId": "guide", "title": "Guide", "text": GUIDE}], load_settings())


def client() -> TestClient:
    return TestClient(create_app(ALL_ROUTERS))


def fragments(where: dict | None = None) -> int:
    """Fragments in this test's memory collection (0 when nothing created it)."""
    store = memory(load_settings()).store
    return store.count(where=where) if store._resolve()[1] is not None else 0


def new_conversation(c: TestClient, headers=ALICE) -> str:
    response = c.post("/api/v1/chat/conversations", json={}, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()["conversationId"]


def stream_turn(c: TestClient, conversation_id: str, message: str, headers=ALICE) -> list:
    with c.stream(
        "POST",
        f"/api/v1/chat/conversations/{conversation_id}/messages/stream",
        json={"message": message},
        headers=headers,
    ) as response:
        assert response.status_code == 200
        messages = parse_sse("".join(response.iter_text()))
    assert messages[-1].event == "Completed", messages[-1].data
    return messages


def ask(c: TestClient, conversation_id: str, message: str, headers=ALICE) -> dict:
    response = c.post(
        f"/api/v1/chat/conversations/{conversation_id}/messages", json={"message": message}, headers=headers
    )
    assert response.status_code == 200, response.text
    return response.json()


def test_a_fact_told_in_one_conversation_is_found_in_the_callers_next_and_never_in_anothers(stack):
    c = client()
    told = new_conversation(c)
    completed = stream_turn(c, told, FACT)[-1].data  # streamed: indexed after Completed was sent
    assert fragments() == 2
    entry = {"$and": [{"messageId": completed["messageId"]}, {"callerId": "alice"}, {"conversationId": told}]}
    assert fragments(entry) == 2
    assert fragments({"$and": [entry, {"kind": "said"}]}) == 1

    later = ask(c, new_conversation(c), QUESTION)  # whole: rag_search inside the turn
    day = utcnow().strftime("%Y-%m-%d")
    assert later["message"].startswith(f"You said on {day}: {FACT} [source:conversation:{told}#")
    remembered = [s for s in later["sources"] if s["documentId"] == f"conversation:{told}"]
    assert remembered and remembered[0]["source"] == "conversation"
    assert remembered[0]["title"] == f"You said on {day}"
    assert f"[source:conversation:{told}#{remembered[0]['chunkIndex']}]" in later["message"]

    other = ask(c, new_conversation(c, BOB), QUESTION, BOB)
    assert "4711" not in other["message"]
    assert not [s for s in other["sources"] if s["documentId"].startswith("conversation:")]


def test_the_initial_search_ranks_the_callers_fragments_too(stack, fake_llm, monkeypatch):
    c = client()
    stream_turn(c, new_conversation(c), FACT)
    for key, value in fake_llm.settings_for("openai_compatible").items():
        monkeypatch.setenv(key.upper(), str(value))
    fake_llm.script(text_reply("It is 4711."), text_reply("I do not know."))
    c = client()  # the model behind the fake LLM answers at once: only the initial search reaches memory
    ask(c, new_conversation(c), QUESTION)
    ask(c, new_conversation(c, BOB), QUESTION, BOB)
    alices, bobs = (str(request["messages"]) for request in fake_llm.requests)
    assert FACT in alices and "4711" not in bobs


def test_delete_removes_the_conversations_fragments(stack):
    c = client()
    gone, kept = new_conversation(c), new_conversation(c)
    stream_turn(c, gone, FACT)
    stream_turn(c, kept, "The dev server listens on which port?")
    assert fragments({"conversationId": gone}) == 2
    assert c.delete(f"/api/v1/chat/conversations/{gone}", headers=ALICE).status_code == 204
    assert fragments({"conversationId": gone}) == 0
    assert fragments({"conversationId": kept}) == 2
    later = ask(c, new_conversation(c), QUESTION)
    assert "4711" not in later["message"]


def test_the_purge_removes_what_a_failed_delete_left_behind(stack, chroma_url, monkeypatch, aws_clients):
    from rag_orchestrator.conversations.archival import run_archival

    c = client()
    cid = new_conversation(c)
    stream_turn(c, cid, FACT)
    monkeypatch.setenv("CHROMA_URL", "http://127.0.0.1:9")  # Chroma unreachable when the caller deletes
    assert client().delete(f"/api/v1/chat/conversations/{cid}", headers=ALICE).status_code == 204
    monkeypatch.setenv("CHROMA_URL", chroma_url)
    assert fragments({"conversationId": cid}) == 2

    monkeypatch.setenv("MEMORY_ENABLED", "false")  # turned off since: what was indexed before still goes
    report = run_archival(
        load_settings(deleted_retention_days=0),
        aws_clients,
        remaining_ms=lambda: 10**9,
        now=utcnow() + timedelta(days=1),
    )
    assert report.purged >= 1 and report.failures == 0
    assert fragments({"conversationId": cid}) == 0


def test_query_never_returns_a_fragment(stack):
    c = client()
    stream_turn(c, new_conversation(c), FACT)
    assert fragments() == 2
    response = c.post("/api/v1/query", json={"query": FACT, "similarityThreshold": 0.0}, headers=ALICE)
    assert response.status_code == 200, response.text
    assert {r["documentId"] for r in response.json()["results"]} == {"guide"}


def test_memory_disabled_indexes_nothing_and_searches_the_knowledge_base_only(stack, monkeypatch):
    monkeypatch.setenv("MEMORY_ENABLED", "false")
    c = client()
    stream_turn(c, new_conversation(c), FACT)
    assert fragments() == 0
    tools = c.get("/api/v1/agent/tools", headers=ALICE).json()["tools"]
    rag = next(t for t in tools if t["name"] == "rag_search")
    assert rag["description"].startswith("Search the knowledge base for")


def seed_attachments() -> None:
    now = utcnow()

    def segment(caller: str, attachment: str, modality: str, index: int, text: str):
        return attachment_segment(
            conversation_id="c-attachments",
            caller_id=caller,
            attachment_id=attachment,
            file_name=f"{attachment}.bin",
            modality=modality,
            index=index,
            text=text,
            created_at=now,
        )

    memory(load_settings()).add(
        [
            segment("alice", "receipt", "image-ocr", 0, "Invoice total for the dev server hosting: 420 EUR."),
            segment("alice", "memo", "audio", 0, "The dev server moves to port 9000 on Friday."),
            segment("alice", "memo", "audio", 1, "Nothing else about the dev server."),
            segment("bob", "bobs", "image-ocr", 0, "Bob's dev server invoice: 99 EUR."),
        ]
    )


async def found(modality=None, caller="alice") -> dict[str, set[str]]:
    arguments = {"query": "dev server port invoice", "max_results": 10}
    if modality is not None:
        arguments["modality"] = modality
    result = await rag_search().execute(arguments, ToolContext("c-new", caller))
    by_source: dict[str, set[str]] = {}
    for p in result.passages:
        by_source.setdefault(p.source or "", set()).add(f"{p.document_id}#{p.chunk_index}")
    return by_source


async def test_rag_search_with_modality_searches_only_those_modalities(stack):
    seed_attachments()
    everything = await found()
    assert everything == {
        "": {"guide#0"},
        "image-ocr": {"attachment:receipt#0"},
        "audio": {"attachment:memo#0", "attachment:memo#1"},
    }
    assert await found("image-ocr") == {"image-ocr": {"attachment:receipt#0"}}
    assert await found(["audio", "image-ocr"]) == {k: v for k, v in everything.items() if k}
    assert await found(["text"]) == {"": {"guide#0"}}
    assert await found("image-ocr", caller="bob") == {"image-ocr": {"attachment:bobs#0"}}


async def test_rag_search_refuses_an_unknown_modality(stack):
    from rag_orchestrator.domain.messages import FunctionCall, ToolCall
    from rag_orchestrator.tools.registry import ToolRegistry

    registry = ToolRegistry([rag_search()])
    call = ToolCall(
        id="c1", function=FunctionCall(name="rag_search", arguments='{"query": "x", "modality": "video"}')
    )
    result = await registry.execute(call, ToolContext("c-new", "alice"))
    assert not result.success and "modality" in (result.error or "")


async def test_a_memory_collection_that_fails_costs_the_memory_not_the_search(stack):
    from rag_orchestrator.retrieval.chunking import Chunk
    from rag_orchestrator.retrieval.vector_store import VectorStore

    settings = load_settings()
    foreign = VectorStore(settings, "another-embedder/1024", collection=settings.chroma_memory_collection)
    foreign.upsert([Chunk("x#0", "x", {"callerId": "alice"})], [[1.0] + [0.0] * 1023])
    assert await found() == {"": {"guide#0"}}  # the knowledge base still answers
