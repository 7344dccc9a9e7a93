"""The work before the first model call: the message embedded once, overlapping the claim and the window."""

from __future__ import annotations

import asyncio

import pytest

from rag_orchestrator.api.deps import loop_config
from rag_orchestrator.config import load_settings
from rag_orchestrator.conversations.in_process import InProcessStore
from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.domain.conversations import Conversation
from rag_orchestrator.errors import ConversationNotFound
from rag_orchestrator.loop.deps import TurnDeps
from rag_orchestrator.loop.orchestrator import Orchestrator
from rag_orchestrator.loop.request import TurnRequest
from rag_orchestrator.loop.toolsets import tool_chooser
from rag_orchestrator.retrieval.query_vector import QueryVector
from rag_orchestrator.text.hashing import HashingEmbedder
from rag_orchestrator.tools.registry import ToolRegistry
from rag_orchestrator.tools.selection import Offer, ToolSelector
from tests.fakes.scripted import MemorySearchTool, ScriptedStrategy, answer
from tests.unit.test_loop import PASSAGES

ALICE = Caller("alice", ("user",))
OFFERS = [
    Offer("rag_search", "", core=True),
    Offer("get_order_status", "get_order_status — where is my order"),
    Offer("open_ticket", "open_ticket — talk to support"),
]
BOUND = 5.0  # a guard against a hang, not a timing assertion


class CountingEmbedder(HashingEmbedder):
    def __init__(self, name: str = "") -> None:
        super().__init__(64)
        self.name = name or self.name
        self.texts: list[str] = []  # the queries embedded one by one (not the tool index's batch)

    def embed_batch(self, texts):
        return [HashingEmbedder.embed(self, text) for text in texts]

    def embed(self, text):
        self.texts.append(text)
        return super().embed(text)


class VectorSearch(MemorySearchTool):
    """rag_search that embeds its query as retrieval.search does: the turn's vector when it serves."""

    def __init__(self, embedder: CountingEmbedder) -> None:
        super().__init__(PASSAGES)
        self.embedder = embedder
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.release.set()

    async def search(self, query, *, caller_id=None, vector=None, **_):
        self.started.set()
        if vector is not None and vector.serves(query, self.embedder):
            await vector.get()
        else:
            self.embedder.embed(query)
        await self.release.wait()
        return await super().search(query)


class GatedStore(InProcessStore):
    """Holds the claim, or the window read, until an event is set."""

    def __init__(self) -> None:
        super().__init__()
        self.claim_gate: asyncio.Event | None = None
        self.window_gate: asyncio.Event | None = None

    async def start_turn(self, *args, **kwargs):
        if self.claim_gate is not None:
            await asyncio.wait_for(self.claim_gate.wait(), BOUND)
        return await super().start_turn(*args, **kwargs)

    async def context(self, *args, **kwargs):
        if self.window_gate is not None:
            await asyncio.wait_for(self.window_gate.wait(), BOUND)
        return await super().context(*args, **kwargs)


def build(embedder: CountingEmbedder, search_embedder: CountingEmbedder | None = None):
    search = VectorSearch(search_embedder or embedder)
    registry = ToolRegistry([search], timeout_seconds=1)
    store = GatedStore()
    orchestrator = Orchestrator(
        TurnDeps(
            store=store,
            strategy=ScriptedStrategy([answer("Run make test.")]),
            tools=registry,
            choose_tools=tool_chooser(registry, ToolSelector(OFFERS, embedder=embedder)),
            config=loop_config(load_settings(conversation_storage="memory")),
            search=search,
            embedder=embedder,
        )
    )
    return orchestrator, store, search


async def run_turn(orchestrator, store, message="How do I run the tests?", caller=ALICE):
    created = await store.create(Conversation(caller_id=caller.caller_id))
    turn = await orchestrator.begin(TurnRequest(created.conversation_id, caller, message))
    return [event async for event in turn.events()]


async def test_the_message_is_embedded_once_for_tool_selection_and_the_initial_search():
    embedder = CountingEmbedder()
    orchestrator, store, search = build(embedder)
    events = await run_turn(orchestrator, store, message="  How do I run the tests? ")
    assert events[-1].type == "Completed"
    assert embedder.texts == ["How do I run the tests?"]
    assert search.queries == ["  How do I run the tests? "]
    assert next(e.status for e in events if e.type == "StatusUpdate") == "Searching the knowledge base"


async def test_an_embedder_of_another_vector_space_embeds_on_its_own():
    selection, other = CountingEmbedder(), CountingEmbedder(name="another-space/64")
    orchestrator, store, _ = build(selection, search_embedder=other)
    await run_turn(orchestrator, store)
    assert selection.texts == other.texts == ["How do I run the tests?"]


async def test_tools_and_search_start_before_the_claim_ends():
    orchestrator, store, search = build(CountingEmbedder())
    store.claim_gate = search.started  # the claim waits for the search: sequential work would hang
    events = await asyncio.wait_for(run_turn(orchestrator, store), BOUND)
    assert events[-1].type == "Completed"


async def test_the_window_is_read_while_the_search_runs():
    orchestrator, store, search = build(CountingEmbedder())
    search.release.clear()
    store.window_gate = asyncio.Event()

    async def release_when_reading():
        await search.started.wait()
        store.window_gate.set()  # the window read may go on only once the search has begun
        await asyncio.sleep(0)
        search.release.set()

    releasing = asyncio.create_task(release_when_reading())
    events = await asyncio.wait_for(run_turn(orchestrator, store), BOUND)
    await releasing
    assert events[-1].type == "Completed"


async def test_a_failed_claim_cancels_the_search_and_sends_nothing():
    orchestrator, store, search = build(CountingEmbedder())
    search.release.clear()  # the search would wait forever
    created = await store.create(Conversation(caller_id="bob"))
    with pytest.raises(ConversationNotFound):
        await orchestrator.begin(TurnRequest(created.conversation_id, ALICE, "How do I run the tests?"))
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    await asyncio.sleep(0)
    assert all(t.done() for t in tasks)


async def test_a_vector_is_embedded_once_however_many_ask():
    embedder = CountingEmbedder()
    vector = QueryVector(embedder, " where is my order ")
    first, second = await asyncio.gather(vector.get(), vector.get())
    assert first == second and embedder.texts == ["where is my order"]
    assert vector.serves("where is my order", embedder)
    assert not vector.serves("another question", embedder)
    assert not vector.serves("where is my order", CountingEmbedder(name="another-space/64"))
    assert not vector.serves("where is my order", None)


class HistorySearch(VectorSearch):
    """Records the conversation each search was given."""

    def __init__(self, embedder: CountingEmbedder) -> None:
        super().__init__(embedder)
        self.histories: list[list[str]] = []

    async def search(self, query, *, caller_id=None, vector=None, history=(), **options):
        self.histories.append([m.content for m in history])
        return await super().search(query, caller_id=caller_id, vector=vector)


async def test_a_later_turn_searches_again_with_its_conversation_and_a_first_turn_once():
    embedder = CountingEmbedder()
    search = HistorySearch(embedder)
    registry = ToolRegistry([search], timeout_seconds=1)
    store = GatedStore()
    orchestrator = Orchestrator(
        TurnDeps(
            store=store,
            strategy=ScriptedStrategy([answer("At 06:30."), answer("At 08:00.")]),
            tools=registry,
            choose_tools=tool_chooser(registry, ToolSelector(OFFERS, embedder=embedder)),
            config=loop_config(load_settings(conversation_storage="memory")),
            search=search,
            embedder=embedder,
        )
    )
    created = await store.create(Conversation(caller_id="alice"))
    for message in ("When does the pool open on weekdays?", "And on Saturdays?"):
        turn = await orchestrator.begin(TurnRequest(created.conversation_id, ALICE, message))
        assert [e async for e in turn.events()][-1].type == "Completed"
    first, *speculative, followed = search.histories
    assert first == []  # the first turn: its words alone, searched once
    # A later one may start with its words alone (beside the claim); once the window is read, the search
    # that the turn uses has the conversation.
    assert speculative in ([], [[]])
    assert followed[:2] == ["When does the pool open on weekdays?", "At 06:30."]
