"""Audit records (docs/audit.md): what a turn's record holds, the hash chain, and its pages, on the
loop with a scripted model and the memory store (the DynamoDB store: tests/integration/test_audit_api.py)."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import pytest

from rag_orchestrator.conversations.in_process import InProcessStore
from rag_orchestrator.domain.audit import GENESIS, canonical, check_chain, digest, record_hash, seal, sealed
from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.domain.conversations import Conversation
from rag_orchestrator.domain.passages import Passage
from rag_orchestrator.errors import BadRequest, ConversationNotFound, ProviderTimeout
from rag_orchestrator.loop.request import TurnRequest
from tests.fakes.scripted import (
    MemorySearchTool,
    ScriptedStrategy,
    answer,
    call,
    scripted_orchestrator,
    tool_calls,
)

ALICE = Caller("alice", ("user",))
PASSAGES = [
    Passage(document_id="guide", title="Guide", chunk_index=0, score=0.9, text="port 8000 and port 9000")
]


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def canonical_hash(record: dict) -> str:
    """The record's hash, computed here from the definition in docs/audit.md."""
    fields = {k: v for k, v in record.items() if k not in ("hash", "callerId")}  # the plain id is outside
    return sha(json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False))


async def run_turn(orchestrator, cid: str, message: str, caller: Caller = ALICE, **request) -> list:
    turn = await orchestrator.begin(
        TurnRequest(conversation_id=cid, caller=caller, message=message, request_id="req-1", **request)
    )
    return [event async for event in turn.events()]


@pytest.fixture
async def store_and_cid():
    store = InProcessStore()
    conversation = await store.create(Conversation(caller_id=ALICE.caller_id))
    return store, conversation.conversation_id


async def test_a_turn_with_two_tool_calls_writes_one_record_with_the_right_hashes(store_and_cid):
    store, cid = store_and_cid
    first = call("rag_search", '{"query": "port"}', "call_a")
    second = call("rag_search", '{"query": "which port"}', "call_b")
    strategy = ScriptedStrategy(
        [
            tool_calls(first, second, reasoning="I should search twice"),
            answer("Port 8000.", reasoning="found it"),
        ]
    )
    orchestrator = scripted_orchestrator(strategy, store=store, search=MemorySearchTool(PASSAGES))
    events = await run_turn(orchestrator, cid, "Which port? ✓")
    assert events[-1].type == "Completed"

    trail = await store.audit(cid)
    (record,) = trail.records
    assert trail.chain_valid and trail.next_cursor is None
    stored = (await store.messages(cid, "alice")).items
    question, _, result_a, result_b, final = stored
    assert record["userMessage"] == {
        "messageId": question.message_id,
        "sha256": sha("Which port? ✓"),
        "length": len("Which port? ✓".encode()),
    }
    assert [(c["toolCallId"], c["toolName"], c["success"]) for c in record["toolCalls"]] == [
        ("call_a", "rag_search", True),
        ("call_b", "rag_search", True),
    ]
    assert record["toolCalls"][0]["arguments"] == {"sha256": sha('{"query": "port"}'), "length": 17}
    assert record["toolCalls"][1]["arguments"]["sha256"] == sha('{"query": "which port"}')
    assert record["toolCalls"][0]["result"]["sha256"] == sha(result_a.content)
    assert record["toolCalls"][1]["result"]["sha256"] == sha(result_b.content)
    assert record["answer"] == {"messageId": final.message_id, "sha256": sha("Port 8000."), "length": 10}
    assert record["reasoning"]["sha256"] == sha("I should search twice\n\nfound it")
    assert (record["outcome"], record["finishReason"], record["error"]) == ("completed", "stop", None)
    assert (record["iterations"], record["tokens"], record["model"]) == (2, 20, "scripted-model")
    assert record["actor"] == {"roles": ["user"]} and record["callerId"] == "alice"
    assert len(record["actorRef"]) == 64 and "alice" not in record["actorRef"]  # an HMAC, in the hash
    assert (record["requestId"], record["conversationId"]) == ("req-1", cid)
    assert record["prevHash"] == GENESIS
    assert record["hash"] == canonical_hash(record) == record_hash(record)
    assert "found it" not in json.dumps(record) and "Port 8000." not in json.dumps(record)

    await run_turn(orchestrator_answering(store, "Again."), cid, "And then?")
    trail = await store.audit(cid)
    assert [r["prevHash"] for r in trail.records] == [GENESIS, record["hash"]]
    assert trail.chain_valid


def orchestrator_answering(store, text: str):
    return scripted_orchestrator(ScriptedStrategy([answer(text)]), store=store)


async def test_failed_and_interrupted_turns_are_audited_too(store_and_cid):
    store, cid = store_and_cid
    failing = scripted_orchestrator(ScriptedStrategy([[ProviderTimeout()]]), store=store)
    events = await run_turn(failing, cid, "Hello?")
    assert events[-1].type == "Error"

    slow = scripted_orchestrator(ScriptedStrategy([answer("a long answer", chunks=5)]), store=store)
    turn = await slow.begin(TurnRequest(conversation_id=cid, caller=ALICE, message="Tell me"))
    stream = turn.events()
    async for event in stream:
        if event.type == "ResponseChunk":
            break
    await stream.aclose()  # the client went away

    failed, interrupted = (await store.audit(cid)).records
    assert (failed["outcome"], failed["error"], failed["answer"]) == (
        "failed",
        "Model provider timed out",
        None,
    )
    assert failed["userMessage"]["sha256"] == sha("Hello?")
    assert (interrupted["outcome"], interrupted["finishReason"], interrupted["answer"]) == (
        "interrupted",
        None,
        None,
    )
    assert interrupted["prevHash"] == failed["hash"]
    assert (await store.audit(cid)).chain_valid


def test_the_chain_notices_an_altered_a_removed_and_a_reordered_record():
    records, head = [], GENESIS
    for n in range(4):
        records.append(seal({"recordId": f"{n:026d}", "userMessage": digest(f"q{n}")}, head, b"key"))
        head = records[-1]["hash"]
    assert check_chain(records) == check_chain(records, GENESIS)
    assert check_chain(records).valid and check_chain(records).last_hash == head

    altered = [dict(r) for r in records]
    altered[1]["userMessage"] = digest("something else")
    assert not check_chain(altered).valid
    assert not check_chain(records[:1] + records[2:]).valid  # one removed from the middle
    assert not check_chain(records[1:]).valid  # the first removed
    assert check_chain(records[:3]).last_hash != head  # the last removed: only the head tells
    assert not check_chain([records[1], records[0], *records[2:]]).valid
    rehashed = dict(altered[1]) | {"hash": record_hash(altered[1])}  # altered and re-hashed
    assert not check_chain([records[0], rehashed, *records[2:]]).valid


def test_a_sealed_value_reads_back_as_the_sealed_record_sharing_nothing():
    entry = {"recordId": "r1", "callerId": "ünï", "actor": {"roles": ["user"]}, "toolCalls": [{"a": 1.5}]}
    kept = sealed(entry, GENESIS, b"key")
    copied = kept.record()
    assert copied == seal(entry, GENESIS, b"key") and check_chain([copied]).valid
    assert list(copied) == [*sorted(set(copied) - {"callerId", "hash"}), "callerId", "hash"]
    assert copied["callerId"] == "ünï" and copied["actorRef"] and kept.hash == copied["hash"]
    entry["actor"]["roles"].append("admin")
    entry["toolCalls"][0]["a"] = 2
    copied["toolCalls"].append("read and changed")
    assert kept.record() == seal(
        {**entry, "actor": {"roles": ["user"]}, "toolCalls": [{"a": 1.5}]}, GENESIS, b"key"
    )
    assert "callerId" not in sealed({"recordId": "r2"}, GENESIS, b"key").record()  # none given, none added


async def test_pages_carry_the_check_from_one_to_the_next(store_and_cid):
    store, cid = store_and_cid
    for n in range(5):
        await run_turn(orchestrator_answering(store, f"answer {n}"), cid, f"question {n}")
    pages, cursor = [], None
    while True:
        page = await store.audit(cid, limit=2, cursor=cursor)
        pages.append(page)
        cursor = page.next_cursor
        if cursor is None:
            break
    assert [len(p.records) for p in pages] == [2, 2, 1]
    assert all(p.chain_valid for p in pages)
    everything = [r for p in pages for r in p.records]
    assert [r["userMessage"]["sha256"] for r in everything] == [sha(f"question {n}") for n in range(5)]

    audits = store._shelf.records[cid].audits
    altered = json.loads(audits[2].text) | {"tokens": 999}
    audits[2] = dataclasses.replace(audits[2], text=canonical(altered))  # tampered where it is kept
    first = await store.audit(cid, limit=2)
    second = await store.audit(cid, limit=2, cursor=first.next_cursor)
    third = await store.audit(cid, limit=2, cursor=second.next_cursor)
    assert (first.chain_valid, second.chain_valid, third.chain_valid) == (True, False, False)

    with pytest.raises(BadRequest):
        await store.audit(cid, limit=2, cursor=first.next_cursor[:-2] + "xx")
    with pytest.raises(ConversationNotFound):
        await store.audit("no-such-conversation")
