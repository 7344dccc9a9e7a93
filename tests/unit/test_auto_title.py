"""The AutoTitle hook with a scripted model and the memory store: when it asks, what it asks with,
and when it leaves a conversation alone."""

from __future__ import annotations

from rag_orchestrator.conversations.in_process import InProcessStore
from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.domain.conversations import Conversation
from rag_orchestrator.errors import RagError
from rag_orchestrator.loop.record import TurnRecord
from rag_orchestrator.loop.request import TurnRequest
from rag_orchestrator.loop.titles import TITLE_MAX_TOKENS, AutoTitle
from tests.fakes.scripted import ScriptedStrategy, answer

ALICE = Caller(caller_id="alice", roles=("user",))


async def titled(store, strategy, *, title=None, failure=None, reason="stop", answered=True) -> str | None:
    cid = (await store.create(Conversation(caller_id="alice", title=title))).conversation_id
    record = TurnRecord(cid, content="Fourteen days.", message_id="M1" if answered else None)
    record.failure, record.finish_reason = failure, reason
    await AutoTitle(store, strategy)(TurnRequest(cid, ALICE, "how long do refunds take?"), record)
    return (await store.get(cid, "alice")).title


async def test_the_model_titles_an_answered_turn_with_a_small_cap_and_no_tools():
    strategy = ScriptedStrategy([answer("Refund timing.")])
    assert await titled(InProcessStore(), strategy) == "Refund timing"
    ((messages, tools, ctx),) = strategy.requests
    assert tools == [] and ctx.max_tokens == TITLE_MAX_TOKENS and not ctx.allow_tools
    assert "how long do refunds take?" in messages[-1].content and "Fourteen days." in messages[-1].content


async def test_an_empty_title_from_the_model_falls_back_to_the_question():
    assert await titled(InProcessStore(), ScriptedStrategy([answer("  ")])) == "How long do refunds take?"


async def test_turns_that_did_not_answer_and_titled_conversations_ask_nothing():
    store, strategy = InProcessStore(), ScriptedStrategy([])
    assert await titled(store, strategy, failure=RagError("broke")) is None
    assert await titled(store, strategy, reason="cancelled") is None
    assert await titled(store, strategy, answered=False) is None
    assert await titled(store, strategy, title="Mine") == "Mine"
    assert strategy.requests == []


async def test_a_turn_that_read_its_conversation_titled_or_not_asks_the_store_nothing_more():
    class Unread(InProcessStore):
        async def get(self, *args, **kwargs):
            raise AssertionError("the turn's window read already said whether there is a title")

    store, strategy = Unread(), ScriptedStrategy([answer("Refund timing.")])
    titled_cid = (await store.create(Conversation(caller_id="alice", title="Mine"))).conversation_id
    untitled_cid = (await store.create(Conversation(caller_id="alice"))).conversation_id
    for cid, titled in ((titled_cid, True), (untitled_cid, False)):
        record = TurnRecord(cid, content="Fourteen days.", message_id="M1")
        record.titled = titled
        await AutoTitle(store, strategy)(TurnRequest(cid, ALICE, "how long do refunds take?"), record)
    assert len(strategy.requests) == 1  # only the untitled conversation asked the model
    assert (await InProcessStore.get(store, untitled_cid, "alice")).title == "Refund timing"
