"""Turns cut short (cancel, deadline), and streamed turns run as tasks over the memory event log: the
events numbered and logged, a reader that leaves, a cancel from another process, replay and follow."""

from __future__ import annotations

import asyncio
import time
from contextlib import aclosing
from typing import Any, ClassVar

from rag_orchestrator.api.deps import stream_config
from rag_orchestrator.config import load_settings
from rag_orchestrator.conversations.in_process import InProcessStore
from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.domain.conversations import Conversation
from rag_orchestrator.domain.messages import ToolResult
from rag_orchestrator.loop.control import RunningTurns
from rag_orchestrator.loop.request import TurnRequest
from rag_orchestrator.loop.turn_stream import TurnStream
from rag_orchestrator.providers import events as se
from rag_orchestrator.providers.strategies import StrategyMetadata
from rag_orchestrator.stream_log.follow import LOST, follow
from rag_orchestrator.stream_log.in_process import InProcessEventLog
from tests.fakes.scripted import ScriptedStrategy, answer, call, scripted_orchestrator, tool_calls

ALICE = Caller("alice", ("user",))
SETTINGS = dict(conversation_storage="memory", loop_initial_rag=False, auth_mode="dev")


class HeldStrategy:
    """Streams `before`, then is `held` until `go` is set, then streams `after` and answers."""

    name = "held"
    metadata = StrategyMetadata("held", "held-model", reasoning=False)

    def __init__(self, before: list[str], after: list[str]) -> None:
        self.before, self.after = before, after
        self.held, self.go = asyncio.Event(), asyncio.Event()

    async def run_iteration(self, messages: Any, tools: Any, ctx: Any):
        for piece in self.before:
            yield se.ContentChunk(piece)
        self.held.set()
        await self.go.wait()
        for piece in self.after:
            yield se.ContentChunk(piece)
        yield se.FinalResponse("".join(self.before + self.after))
        yield se.IterationComplete(se.Usage(5, 5, 10))


class HangingTool:
    name = "hang"
    description = "never answers"
    parameters: ClassVar[dict] = {"type": "object", "properties": {}}

    async def execute(self, arguments: dict, ctx: Any) -> ToolResult:
        await asyncio.sleep(60)
        raise AssertionError("not reached")


async def begin(orchestrator: Any, store: InProcessStore, deadline: float | None = None):
    cid = (await store.create(Conversation(caller_id="alice"))).conversation_id
    return cid, await orchestrator.begin(TurnRequest(cid, ALICE, "hi", deadline=deadline))


async def collect(turn: Any) -> list:
    return [event async for event in turn.events()]


async def test_a_cancel_mid_answer_keeps_the_text_marked_interrupted_and_frees_the_conversation():
    store, strategy = InProcessStore(), HeldStrategy(["Partial ", "answer"], ["never"])
    orchestrator = scripted_orchestrator(strategy, store=store, settings=load_settings(**SETTINGS))
    cid, turn = await begin(orchestrator, store)
    running = asyncio.create_task(collect(turn))
    await strategy.held.wait()  # both chunks taken: the model is thinking
    turn.control.cancel()
    events = await running
    assert [e.type for e in events][-2:] == ["ResponseChunk", "Completed"]
    assert events[-1].finish_reason == "cancelled" and {e.turn_id for e in events} == {turn.turn_id}
    stored = (await store.messages(cid, "alice")).items
    assert [(m.role, m.content, m.interrupted) for m in stored][-1] == ("assistant", "Partial answer", True)
    assert events[-1].message_id == stored[-1].message_id
    await orchestrator.begin(TurnRequest(cid, ALICE, "again"))  # the lock was released


async def test_the_deadline_cuts_a_tool_call_and_nothing_half_done_is_stored():
    store = InProcessStore()
    strategy = ScriptedStrategy([tool_calls(call("hang")), answer("unreached")])
    orchestrator = scripted_orchestrator(
        strategy, store=store, tools=[HangingTool()], settings=load_settings(**SETTINGS), timeout_seconds=60
    )
    cid, turn = await begin(orchestrator, store, deadline=time.time() + 0.2)
    events = await collect(turn)
    assert [e.type for e in events][-2:] == ["ToolCallStart", "Completed"]
    assert (events[-1].finish_reason, events[-1].message_id) == ("deadline", None)
    assert [m.role for m in (await store.messages(cid, "alice")).items] == ["user"]  # no unanswered call


async def test_the_lock_lease_is_the_deadline_plus_the_margin():
    store = InProcessStore()
    settings = load_settings(**SETTINGS, turn_deadline_margin_seconds=2)
    orchestrator = scripted_orchestrator(ScriptedStrategy([answer("ok")]), store=store, settings=settings)
    started = time.time()
    cid, _ = await begin(orchestrator, store, deadline=started + 10)
    assert started + 12 <= store._shelf.records[cid].lock_until <= time.time() + 13
    _, _ = await begin(orchestrator, store)  # no deadline given: the default budget
    assert max(r.lock_until for r in store._shelf.records.values()) >= started + 300


async def streamed(strategy: Any, log: Any = None, **settings: Any) -> tuple[TurnStream, Any, Any, str]:
    """A turn of `strategy` started as the stream route starts one: (stream, store, log, conversation)."""
    store, log = InProcessStore(), log or InProcessEventLog()
    config = load_settings(**SETTINGS, **({"stream_log_flush_ms": 20} | settings))
    cid, turn = await begin(scripted_orchestrator(strategy, store=store, settings=config), store)
    stream = TurnStream(turn, log=log, running=RunningTurns(), config=stream_config(config))
    stream.start()
    return stream, store, log, cid


async def test_a_streamed_turns_events_are_numbered_and_logged_up_to_the_terminal_one():
    stream, _store, log, cid = await streamed(ScriptedStrategy([answer("a b c d", chunks=4)]))
    turn = stream.turn
    sent = [item async for item in stream.frames() if item is not None]
    await stream.finished()
    assert [e.seq for e in sent] == list(range(1, len(sent) + 1)) and sent[-1].type == "Completed"
    assert await log.events(cid, turn.turn_id) == sent
    entry = await log.get(cid, turn.turn_id, "alice")
    assert (entry.status, entry.last_seq) == ("ended", len(sent))


async def test_a_reader_that_leaves_does_not_stop_the_turn():
    strategy = HeldStrategy(["one ", "two "], ["three"])
    stream, store, log, cid = await streamed(strategy)
    turn = stream.turn
    async with aclosing(stream.frames()) as frames:
        seen = [await anext(frames) for _ in range(2)]  # StatusUpdate, one chunk: then the client goes
    strategy.go.set()
    await stream.finished()
    stored = (await store.messages(cid, "alice")).items
    assert (stored[-1].content, stored[-1].interrupted) == ("one two three", False)
    logged = await log.events(cid, turn.turn_id)
    assert logged[: len(seen)] == seen and logged[-1].type == "Completed"


async def test_what_a_leaving_reader_was_sent_is_logged_at_once_for_its_reconnect():
    strategy = HeldStrategy(["one ", "two "], ["three"])
    stream, _store, log, cid = await streamed(strategy, stream_log_flush_ms=5000)  # no timed write soon
    async with aclosing(stream.frames()) as frames:
        seen = [await anext(frames) for _ in range(2)]
    await strategy.held.wait()
    logged: list = []
    for _ in range(100):  # the flusher's turns of the event loop, not a timer's
        if len(logged := await log.events(cid, stream.turn_id)) >= len(seen):
            break
        await asyncio.sleep(0)
    assert logged[: len(seen)] == seen and stream.turn.control.reason is None  # still running
    strategy.go.set()
    await stream.finished()


async def test_with_stop_on_disconnect_a_leaving_reader_cancels_the_turn():
    stream, store, log, cid = await streamed(HeldStrategy(["one "], ["two"]), turn_stop_on_disconnect=True)
    turn = stream.turn
    async with aclosing(stream.frames()) as frames:
        await anext(frames)
        await anext(frames)
    await stream.finished()
    logged = await log.events(cid, turn.turn_id)
    assert logged[-1].type == "Completed" and '"finishReason":"cancelled"' in logged[-1].data
    assert (await store.messages(cid, "alice")).items[-1].interrupted


async def test_a_cancel_asked_for_in_the_log_stops_the_turn_and_a_quiet_one_gets_keep_alives():
    stream, _store, log, cid = await streamed(HeldStrategy(["one "], ["two"]), sse_keepalive_seconds=0.05)
    turn = stream.turn
    got: list = []
    async for item in stream.frames():
        got.append(item)
        if item is None and None not in got[:-1]:
            await log.request_cancel(cid, turn.turn_id, "alice")  # as the cancel route of another process
    assert None in got and got[-1].type == "Completed" and '"cancelled"' in got[-1].data


async def test_a_log_that_fails_never_stops_the_turn():
    class BrokenLog(InProcessEventLog):
        async def append(self, entry: Any, events: Any) -> None:
            raise ConnectionError("down")

    stream, store, _log, cid = await streamed(ScriptedStrategy([answer("fine", chunks=2)]), log=BrokenLog())
    sent = [item async for item in stream.frames() if item is not None]
    await stream.finished()
    assert sent[-1].type == "Completed" and (await store.messages(cid, "alice")).items[-1].content == "fine"


async def test_follow_replays_after_the_last_seen_then_follows_until_the_terminal_event():
    strategy = HeldStrategy(["one ", "two "], ["three"])
    stream, _store, log, cid = await streamed(strategy)
    turn = stream.turn
    async with aclosing(stream.frames()) as frames:
        first = await anext(frames)
    entry = await log.get(cid, turn.turn_id, "alice")
    followed = follow(log, entry, first.seq, poll_seconds=0.01, margin_seconds=1)
    got = [await anext(followed) for _ in range(2)]
    strategy.go.set()
    got += [event async for event in followed]
    assert [e.seq for e in got] == list(range(2, len(got) + 2)) and got[-1].type == "Completed"
    replay = [
        e
        async for e in follow(
            log, await log.get(cid, turn.turn_id, "alice"), 0, poll_seconds=0.01, margin_seconds=1
        )
    ]
    assert replay == [first, *got]  # a finished turn: all of it, then the end


async def test_follow_gives_up_on_a_turn_whose_process_died_with_one_error_numbered_next():
    from rag_orchestrator.stream_log.log import LoggedEvent, TurnEntry

    log = InProcessEventLog()
    entry = TurnEntry("conv-1", "01DEAD", "alice", deadline=time.time() - 5)
    await log.open(entry)
    await log.append(entry, [LoggedEvent(1, "StatusUpdate", "{}"), LoggedEvent(2, "ResponseChunk", "{}")])
    got = [e async for e in follow(log, entry, 1, poll_seconds=0.01, margin_seconds=1)]
    assert [(e.seq, e.type) for e in got] == [(2, "ResponseChunk"), (3, "Error")]
    assert LOST in got[-1].data and '"turnId":"01DEAD"' in got[-1].data


async def test_a_turn_that_ends_while_a_batch_is_being_written_still_logs_its_last_events():
    class SlowLog(InProcessEventLog):
        def __init__(self) -> None:
            super().__init__()
            self.writing, self.release = asyncio.Event(), asyncio.Event()

        async def append(self, entry: Any, events: Any) -> None:
            self.writing.set()
            await self.release.wait()
            await super().append(entry, events)

    strategy = HeldStrategy(["one "], ["two"])
    log = SlowLog()
    stream, _store, log, cid = await streamed(strategy, log=log)
    turn = stream.turn
    await log.writing.wait()  # the first batch is being written...
    strategy.go.set()
    sent = [item async for item in stream.frames() if item is not None]  # ...when the turn ends
    log.release.set()
    await stream.finished()
    assert await log.events(cid, turn.turn_id) == sent and sent[-1].type == "Completed"
    assert (await log.get(cid, turn.turn_id, "alice")).status == "ended"
