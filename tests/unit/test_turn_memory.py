"""Which turns become fragments, what a fragment holds, and where the after-turn work runs (no network:
a recording index stands in for Chroma; tests/integration/test_memory.py runs the real one)."""

from __future__ import annotations

import asyncio
from contextlib import aclosing
from datetime import UTC, datetime

import pytest

from rag_orchestrator.api.chat import _sse
from rag_orchestrator.api.deps import stream_config
from rag_orchestrator.config import load_settings
from rag_orchestrator.conversations.in_process import InProcessStore
from rag_orchestrator.domain.callers import ANONYMOUS_CALLER, Caller
from rag_orchestrator.domain.conversations import Conversation
from rag_orchestrator.errors import ProviderHTTPError, VectorStoreUnavailable
from rag_orchestrator.loop.control import RunningTurns
from rag_orchestrator.loop.request import TurnRequest
from rag_orchestrator.loop.turn_memory import TurnMemory
from rag_orchestrator.loop.turn_stream import TurnStream
from rag_orchestrator.retrieval.fragments import (
    MAX_FRAGMENT_CHARS,
    Fragment,
    FragmentIndex,
    attachment_segment,
    conversation_fragments,
)
from rag_orchestrator.retrieval.vector_store import build_where
from rag_orchestrator.stream_log.in_process import InProcessEventLog
from tests.fakes.scripted import ScriptedStrategy, answer, scripted_orchestrator

ALICE = Caller("alice", ("user",))
WHEN = datetime(2026, 11, 23, 9, 30, 0, 123000, tzinfo=UTC)


class RecordingIndex:
    """FragmentIndex.add without Chroma: keeps what it was given, or fails like Chroma down."""

    def __init__(self, fail: Exception | None = None) -> None:
        self.added: list = []
        self.fail = fail

    def add(self, fragments) -> None:
        if self.fail:
            raise self.fail
        self.added.extend(fragments)


async def run_turn(script, *, caller=ALICE, message="My locker code is 4711.", hooks=(), store=None):
    orchestrator = scripted_orchestrator(ScriptedStrategy(script), after_turn=hooks, store=store)
    conversation = await orchestrator.deps.store.create(Conversation(caller_id=caller.caller_id))
    request = TurnRequest(conversation_id=conversation.conversation_id, caller=caller, message=message)
    turn = await orchestrator.begin(request)
    events = [event async for event in turn.events()]
    await turn.after()
    return turn, events


async def test_an_answered_turn_becomes_a_said_and_an_answered_fragment():
    index, store = RecordingIndex(), InProcessStore()
    turn, events = await run_turn(
        [answer("Noted: 4711 [source:guide#0].")], store=store, hooks=[TurnMemory(index, store)]
    )
    said, answered = index.added
    completed = events[-1]
    assert (said.kind, said.text) == ("said", "My locker code is 4711.")
    assert (answered.kind, answered.text) == ("answered", "Noted: 4711.")  # citations dropped
    assert said.message_id == answered.message_id == completed.message_id  # the exchange's answer
    chunk = answered.chunk()
    assert (
        chunk.id == f"answered-{completed.message_id}" and said.chunk().id == f"said-{completed.message_id}"
    )
    day = f"{answered.created_at:%Y-%m-%d}"
    assert chunk.metadata == {
        "documentId": f"conversation:{turn.request.conversation_id}",
        "chunkIndex": answered.index,
        "title": f"An earlier answer of {day}, may be outdated",
        "source": "conversation",
        "modality": "text",
        "conversationId": turn.request.conversation_id,
        "callerId": "alice",
        "messageId": completed.message_id,
        "kind": "answered",
        "createdAt": answered.created_at.isoformat().replace("+00:00", "Z"),
    }
    assert said.chunk().metadata["title"] == f"You said on {day}"
    assert said.index + 1 == answered.index  # two citations of their own


async def test_a_temporary_chat_is_not_indexed():
    index, store = RecordingIndex(), InProcessStore()
    orchestrator = scripted_orchestrator(
        ScriptedStrategy([answer("Noted.")]), store=store, after_turn=[TurnMemory(index, store)]
    )
    conversation = await orchestrator.deps.store.create(Conversation(caller_id="alice", memory=False))
    turn = await orchestrator.begin(TurnRequest(conversation.conversation_id, ALICE, "My code is 4711."))
    assert [e async for e in turn.events()][-1].type == "Completed"
    await turn.after()
    assert index.added == [] and turn.state.request.memory is False


@pytest.mark.parametrize(
    ("script", "caller"),
    [
        ([[ProviderHTTPError(503, "down")]], ALICE),  # failed: an Error event
        ([answer("   ")], ALICE),  # nothing answered
        ([answer("Hello.")], ANONYMOUS_CALLER),  # a guest: expires, and is offered no rag_search
    ],
    ids=["failed", "empty", "anonymous"],
)
async def test_turns_that_did_not_answer_or_are_a_guests_are_not_indexed(script, caller):
    index, store = RecordingIndex(), InProcessStore()
    await run_turn(script, caller=caller, store=store, hooks=[TurnMemory(index, store)])
    assert index.added == []


async def test_an_interrupted_turn_runs_no_after_turn_work():
    index, store = RecordingIndex(), InProcessStore()
    orchestrator = scripted_orchestrator(
        ScriptedStrategy([answer("a long answer", chunks=5)]),
        store=store,
        after_turn=[TurnMemory(index, store)],
    )
    conversation = await orchestrator.deps.store.create(Conversation(caller_id="alice"))
    turn = await orchestrator.begin(TurnRequest(conversation.conversation_id, ALICE, "hi"))
    stream = turn.events()
    async for event in stream:
        if event.type == "ResponseChunk":
            break
    await stream.aclose()  # the client went away mid-answer
    await turn.after()
    assert index.added == []


async def test_a_failing_hook_is_logged_and_the_others_still_run():
    class Broken:
        async def __call__(self, request, record):
            raise RuntimeError("boom")

    down, index, store = RecordingIndex(VectorStoreUnavailable()), RecordingIndex(), InProcessStore()
    hooks = [Broken(), TurnMemory(down, store), TurnMemory(index, store)]
    _, events = await run_turn([answer("Noted.")], store=store, hooks=hooks)
    assert events[-1].type == "Completed" and len(index.added) == 2


async def _streamed_turn(hook) -> TurnStream:
    settings = load_settings(conversation_storage="memory", loop_initial_rag=False, auth_mode="dev")
    orchestrator = scripted_orchestrator(
        ScriptedStrategy([answer("Noted.")]), after_turn=[hook], settings=settings
    )
    conversation = await orchestrator.deps.store.create(Conversation(caller_id="alice"))
    turn = await orchestrator.begin(TurnRequest(conversation.conversation_id, ALICE, "hi"))
    stream = TurnStream(turn, log=InProcessEventLog(), running=RunningTurns(), config=stream_config(settings))
    stream.start()
    return stream


async def test_the_stream_runs_the_after_turn_work_once_the_terminal_event_is_out():
    seen: list[str] = []

    class Hook:
        async def __call__(self, request, record):
            seen.append("after")

    async for data in _sse(await _streamed_turn(Hook()), 0.0):
        seen.append(data.decode().split("\n", 1)[0].removeprefix("event: "))
    assert seen[-2:] == ["Completed", "after"]  # and the body ended only after it


async def test_a_turn_whose_reader_left_still_runs_its_after_turn_work():
    done = asyncio.Event()

    class Hook:
        async def __call__(self, request, record):
            done.set()

    stream = await _streamed_turn(Hook())
    async with aclosing(stream.frames()) as frames:
        await anext(frames)  # the first event, then the client goes
    await asyncio.wait_for(done.wait(), 5)


def test_the_same_turn_gets_the_same_ids_and_an_answers_time_makes_its_chunk_indexes():
    make = dict(conversation_id="c1", caller_id="alice", message_id="01J", question="q", answer="a")
    first, again = (
        conversation_fragments(**make, created_at=WHEN),
        conversation_fragments(**make, created_at=WHEN),
    )
    assert [f.id for f in first] == [f.id for f in again] == ["said-01J", "answered-01J"]
    assert [f.index for f in first] == [1795426200123 * 2, 1795426200123 * 2 + 1]


def segment(**changes) -> Fragment:
    """An attachment's segment; `changes` override the defaults."""
    return attachment_segment(
        **{
            "conversation_id": "c1",
            "caller_id": "alice",
            "attachment_id": "a9",
            "file_name": "scan.png",
            "modality": "image-ocr",
            "index": 2,
            "text": "Total 42",
            "created_at": WHEN,
            **changes,
        }
    )


def test_attachment_segments_carry_their_modality_attachment_and_index():
    made = segment()
    assert made.id == "attachment:a9#2"
    assert {
        k: made.chunk().metadata[k] for k in ("source", "modality", "attachmentId", "index", "title")
    } == {
        "source": "image-ocr",
        "modality": "image-ocr",
        "attachmentId": "a9",
        "index": 2,
        "title": "scan.png (image-ocr)",
    }
    with pytest.raises(ValueError, match="modality must be one of"):
        segment(modality="video")


def test_an_index_refuses_empty_and_oversized_fragments_and_one_without_embedder_only_forgets():
    index = FragmentIndex(store=None, embedder=object())  # type: ignore[arg-type]
    for text in ("  ", "x" * (MAX_FRAGMENT_CHARS + 1)):
        with pytest.raises(ValueError, match="1 to"):
            index.add([segment(text=text)])
    with pytest.raises(ValueError, match="only forgets"):
        FragmentIndex(store=None, embedder=None).add([])  # type: ignore[arg-type]


def test_the_where_filter_puts_the_caller_and_the_modalities_in_chroma():
    assert build_where(caller_id="alice") == {"callerId": "alice"}
    assert build_where(caller_id="alice", modality=["audio", "image-ocr", "audio"]) == {
        "$and": [{"callerId": "alice"}, {"modality": {"$in": ["audio", "image-ocr"]}}]
    }
    assert build_where(modality=["text"]) == {"modality": "text"}
