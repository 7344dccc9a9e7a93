"""The agentic loop driven by a scripted strategy over in-memory conversations: no network."""

from __future__ import annotations

import asyncio
import json
from typing import ClassVar

import pytest

from rag_orchestrator.api.deps import loop_config
from rag_orchestrator.config import load_settings
from rag_orchestrator.conversations.in_process import InProcessStore
from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.domain.conversations import Conversation, MessageResponse, estimate_tokens
from rag_orchestrator.domain.fences import blocks
from rag_orchestrator.domain.messages import Role, ToolResult
from rag_orchestrator.domain.passages import Passage
from rag_orchestrator.errors import Conflict, ConversationNotFound, DuplicateClientMessage, ProviderHTTPError
from rag_orchestrator.loop.deps import TurnDeps
from rag_orchestrator.loop.finalizers import DirectFinalizer, StructuredFinalizer
from rag_orchestrator.loop.orchestrator import Orchestrator
from rag_orchestrator.loop.request import TurnRequest
from rag_orchestrator.loop.toolsets import tool_chooser
from rag_orchestrator.providers import events as se
from rag_orchestrator.tools.registry import ToolRegistry
from tests.fakes.scripted import MemorySearchTool, ScriptedStrategy, answer, call, tool_calls

ALICE = Caller("alice", ("user",))
PASSAGES = [
    Passage(
        document_id="guide", title="Guide", chunk_index=0, score=0.9, text="Run make test to run the suite."
    ),
    Passage(document_id="guide", title="Guide", chunk_index=1, score=0.8, text="Run make dev for the stack."),
]


class SlowTool:
    """Records when it starts and ends, to show that calls of one response run together."""

    parameters: ClassVar[dict] = {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
    }
    description = "slow"

    def __init__(self, name: str, log: list[str]) -> None:
        self.name = name
        self.log = log

    async def execute(self, arguments, ctx):
        self.log.append(f"start {arguments['n']}")
        await asyncio.sleep(0.01 * (3 - arguments["n"]))
        self.log.append(f"end {arguments['n']}")
        return ToolResult(tool_call_id="", tool_name=self.name, result=f"result {arguments['n']}")


class Harness:
    def __init__(self, strategy, *, tools=None, search=None, finalizer=None, **env):
        self.settings = load_settings(conversation_storage="memory", **env)
        self.store = InProcessStore()
        self.search = search or MemorySearchTool(PASSAGES)
        self.registry = ToolRegistry([self.search, *(tools or [])], timeout_seconds=0.5)
        self.strategy = strategy
        self.orchestrator = Orchestrator(
            TurnDeps(
                store=self.store,
                strategy=strategy,
                tools=self.registry,
                choose_tools=tool_chooser(self.registry),
                config=loop_config(self.settings),
                search=self.search,
                finalizer=finalizer or DirectFinalizer(),
            )
        )

    async def conversation(self, caller=ALICE) -> str:
        created = await self.store.create(Conversation(caller_id=caller.caller_id))
        return created.conversation_id

    async def turn(self, conversation_id, message="How do I run the tests?", caller=ALICE, **kwargs):
        request = TurnRequest(conversation_id=conversation_id, caller=caller, message=message, **kwargs)
        turn = await self.orchestrator.begin(request)
        events = [event async for event in turn.events()]
        return turn, events

    async def stored(self, conversation_id, caller=ALICE):
        page = await self.store.messages(conversation_id, caller.caller_id, limit=100)
        return page.items


def types(events):
    return [e.type for e in events]


def statuses(events):
    return [e.status for e in events if e.type == "StatusUpdate"]


def assert_one_terminal(events):
    terminal = [e for e in events if e.type in ("Completed", "Error")]
    assert len(terminal) == 1 and events[-1] is terminal[0]


async def test_one_tool_turn_streams_every_event_and_stores_the_turn():
    h = Harness(
        ScriptedStrategy(
            [
                tool_calls(call("rag_search", '{"query": "tests"}')),
                answer("Run make test [source:guide#0].", chunks=4),
            ]
        )
    )
    cid = await h.conversation()
    _, events = await h.turn(cid)

    assert types(events)[:4] == ["StatusUpdate", "StatusUpdate", "ToolCallStart", "ToolCallResult"]
    assert types(events)[4:-2] == ["StatusUpdate", *["ResponseChunk"] * 4]
    assert types(events)[-2:] == ["Sources", "Completed"]
    assert statuses(events) == ["Searching the knowledge base", "Iteration 1 of 10", "Iteration 2 of 10"]
    assert_one_terminal(events)
    assert (
        "".join(e.content for e in events if e.type == "ResponseChunk") == "Run make test [source:guide#0]."
    )
    assert events[2].arguments == {"query": "tests"} and events[3].success
    assert [s.model_dump(mode="json") for s in events[-2].sources] == [
        {
            "documentId": "guide",
            "title": "Guide",
            "chunkIndex": 0,
            "score": 0.9,
            "source": None,
            "tags": [],
            "snippet": "Run make test to run the suite.",
        }
    ]
    completed = events[-1]
    assert (completed.iterations_used, completed.tokens_used, completed.finish_reason) == (2, 20, "stop")

    stored = await h.stored(cid)
    assert [m.role for m in stored] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]
    assert stored[-1].message_id == completed.message_id
    assert stored[-1].content == "Run make test [source:guide#0]."
    conversation = await h.store.get(cid, "alice")
    user_tokens = estimate_tokens("How do I run the tests?")
    assert (conversation.message_count, conversation.tool_calls_count) == (4, 1)
    assert conversation.total_tokens == user_tokens + 20


@pytest.mark.parametrize("mode", [se.StreamingMode.PROGRESSIVE, se.StreamingMode.FINAL_ONLY])
async def test_the_structured_finalizer_frames_the_answer_alike_streamed_and_stored(mode):
    h = Harness(
        ScriptedStrategy(
            [
                tool_calls(call("rag_search", '{"query": "tests"}')),
                answer("Run make test [source:guide#0].", chunks=3),
            ]
        ),
        finalizer=StructuredFinalizer(),
    )
    cid = await h.conversation()
    _, events = await h.turn(cid, mode=mode)
    framed = "## Response\n\nRun make test [source:guide#0].\n\n**Sources**\n- Guide [source:guide#0]"
    assert (await h.stored(cid))[-1].content == framed
    streamed = "".join(e.content for e in events if e.type == "ResponseChunk")
    assert streamed == (framed if mode is se.StreamingMode.PROGRESSIVE else "")


async def test_initial_knowledge_search_reaches_the_model_as_data_before_the_question():
    h = Harness(ScriptedStrategy([answer("ok")]))
    cid = await h.conversation()
    await h.turn(cid)
    messages, tools, ctx = h.strategy.requests[0]
    assert [m.role for m in messages] == [Role.SYSTEM, Role.USER, Role.USER]
    data, question = messages[1:]
    (knowledge,) = blocks(data.content, "knowledge")
    assert data.content.startswith("[Data from the app]") and question.content == "How do I run the tests?"
    assert json.loads(knowledge)["results"][0]["documentId"] == "guide"
    assert "guide" not in messages[0].content  # the passages are data, never the system message
    assert [t["function"]["name"] for t in tools] == ["rag_search"]
    assert ctx.allow_tools and ctx.iteration == 1


async def test_initial_search_can_be_switched_off():
    h = Harness(ScriptedStrategy([answer("ok")]), loop_initial_rag=False)
    cid = await h.conversation()
    _, events = await h.turn(cid)
    assert h.search.queries == []
    assert types(events) == ["StatusUpdate", "ResponseChunk", "Completed"]


async def test_knowledge_search_failure_degrades_and_the_turn_goes_on():
    from rag_orchestrator.errors import VectorStoreUnavailable

    h = Harness(
        ScriptedStrategy([answer("I could not search.")]),
        search=MemorySearchTool([], fail=VectorStoreUnavailable()),
    )
    cid = await h.conversation()
    _, events = await h.turn(cid)
    assert statuses(events) == [
        "Searching the knowledge base",
        "Knowledge base unavailable",
        "Iteration 1 of 10",
    ]
    assert events[-1].type == "Completed"


async def test_the_iteration_cap_counts_every_model_call_and_the_last_is_made_without_tools():
    strategy = ScriptedStrategy(
        [tool_calls(call("rag_search", '{"query": "x"}'))] * 2 + [answer("Best effort.")]
    )
    h = Harness(strategy, loop_max_iterations=3)
    cid = await h.conversation()
    _, events = await h.turn(cid)
    assert len(strategy.requests) == 3
    assert [bool(tools) for _, tools, _ in strategy.requests] == [True, True, False]
    assert not strategy.requests[-1][2].allow_tools
    iterations = [e for e in events if e.type == "StatusUpdate" and e.status.startswith("Iteration")]
    assert [e.status for e in iterations] == ["Iteration 1 of 3", "Iteration 2 of 3", "Iteration 3 of 3"]
    assert "iteration limit" in iterations[-1].details
    assert events[-1].type == "Completed"
    assert (events[-1].iterations_used, events[-1].finish_reason) == (3, "max_iterations")


async def test_a_one_call_cap_answers_without_tools_and_was_not_cut():
    h = Harness(ScriptedStrategy([answer("Straight away.")]), loop_max_iterations=1)
    cid = await h.conversation()
    _, events = await h.turn(cid)
    assert h.strategy.requests[0][1] == []
    assert (events[-1].iterations_used, events[-1].finish_reason) == (1, "stop")


async def test_a_model_that_keeps_calling_tools_without_tools_still_ends():
    h = Harness(
        ScriptedStrategy([tool_calls(call("rag_search", '{"query": "x"}'))], repeat_last=True),
        loop_max_iterations=2,
    )
    cid = await h.conversation()
    _, events = await h.turn(cid)
    assert len(h.strategy.requests) == 2
    assert events[-1].type == "Completed" and events[-1].finish_reason == "max_iterations"
    stored = await h.stored(cid)
    assert all(not (m.tool_calls and m.role is Role.ASSISTANT and m is stored[-1]) for m in stored)


async def test_bad_arguments_and_unknown_tools_go_back_to_the_model_and_the_turn_goes_on():
    h = Harness(
        ScriptedStrategy(
            [
                tool_calls(
                    call("rag_search", "{not json", "c1"),
                    call("launch_rockets", "{}", "c2"),
                    call("rag_search", '{"max_results": 2}', "c3"),
                ),
                answer("Sorry."),
            ]
        )
    )
    cid = await h.conversation()
    _, events = await h.turn(cid)
    results = [e for e in events if e.type == "ToolCallResult"]
    assert [(r.tool_call_id, r.success) for r in results] == [("c1", False), ("c2", False), ("c3", False)]
    assert "Unknown tool" in results[1].result and "query" in results[2].result
    tool_messages = [m for m in h.strategy.requests[1][0] if m.role is Role.TOOL]
    assert [m.tool_call_id for m in tool_messages] == ["c1", "c2", "c3"]
    assert events[-1].type == "Completed"


async def test_tool_calls_of_one_response_run_concurrently_and_return_in_call_order():
    log: list[str] = []
    h = Harness(
        ScriptedStrategy(
            [tool_calls(call("slow", '{"n": 1}', "a"), call("slow", '{"n": 2}', "b")), answer("done")]
        ),
        tools=[SlowTool("slow", log)],
    )
    cid = await h.conversation()
    _, events = await h.turn(cid)
    assert log[:2] == ["start 1", "start 2"]  # both started before either ended
    assert log.index("end 2") < log.index("end 1")
    assert [e.tool_call_id for e in events if e.type == "ToolCallResult"] == ["a", "b"]


async def test_a_tool_that_times_out_is_an_unsuccessful_result():
    class Hang(SlowTool):
        async def execute(self, arguments, ctx):
            await asyncio.sleep(5)

    h = Harness(
        ScriptedStrategy([tool_calls(call("hang", '{"n": 1}')), answer("ok")]), tools=[Hang("hang", [])]
    )
    cid = await h.conversation()
    _, events = await h.turn(cid)
    result = next(e for e in events if e.type == "ToolCallResult")
    assert not result.success and "timed out" in result.result
    assert events[-1].type == "Completed"


async def test_reasoning_is_stored_and_replayed_but_never_streamed():
    h = Harness(
        ScriptedStrategy(
            [
                tool_calls(call("rag_search", '{"query": "q"}'), reasoning="SECRET-THOUGHT-1"),
                answer("Answer.", reasoning="SECRET-THOUGHT-2"),
                answer("Second answer."),
            ]
        )
    )
    cid = await h.conversation()
    _, events = await h.turn(cid)
    assert "SECRET-THOUGHT" not in "".join(e.model_dump_json() for e in events)
    stored = await h.stored(cid)
    assert [m.reasoning for m in stored] == [None, "SECRET-THOUGHT-1", None, "SECRET-THOUGHT-2"]
    shown = json.dumps([MessageResponse.of(m).model_dump(mode="json") for m in stored])
    assert "SECRET-THOUGHT" not in shown
    await h.turn(cid, "And then?")
    replayed = h.strategy.requests[2][0]
    assert [m.reasoning for m in replayed if m.reasoning] == ["SECRET-THOUGHT-1", "SECRET-THOUGHT-2"]


async def test_final_only_mode_sends_no_chunks():
    from rag_orchestrator.providers.events import StreamingMode

    h = Harness(ScriptedStrategy([answer("Whole answer.", chunks=3)]))
    cid = await h.conversation()
    turn, events = await h.turn(cid, mode=StreamingMode.FINAL_ONLY)
    assert "ResponseChunk" not in types(events)
    assert turn.record.content == "Whole answer."
    # the strategy still streams, so a turn cut at its deadline keeps the text it had
    assert h.strategy.requests[0][2].streaming_mode is StreamingMode.PROGRESSIVE


async def test_provider_failure_ends_with_one_safe_error_and_keeps_the_conversation_consistent():
    h = Harness(
        ScriptedStrategy(
            [
                [se.ContentChunk("Partial"), ProviderHTTPError(500, "Model provider answered HTTP 500")],
                answer("Recovered."),
            ]
        )
    )
    cid = await h.conversation()
    turn, events = await h.turn(cid)
    assert_one_terminal(events)
    assert events[-1].type == "Error"
    assert events[-1].error == "Model provider answered HTTP 500; try again later"
    assert turn.record.failure is not None
    stored = await h.stored(cid)
    assert [m.role for m in stored] == [Role.USER]
    _, events = await h.turn(cid, "Try again")  # the lock was released
    assert events[-1].type == "Completed"


async def test_unexpected_failure_message_hides_internals():
    h = Harness(ScriptedStrategy([[RuntimeError("Traceback: /srv/secret.py")]]))
    cid = await h.conversation()
    _, events = await h.turn(cid)
    assert events[-1].type == "Error" and "secret" not in events[-1].error


async def test_a_second_turn_while_one_runs_is_a_conflict_and_a_repeated_client_message_id_too():
    h = Harness(ScriptedStrategy([answer("one"), answer("two")]))
    cid = await h.conversation()
    first = await h.orchestrator.begin(TurnRequest(cid, ALICE, "first", client_message_id="m-1"))
    with pytest.raises(Conflict):
        await h.orchestrator.begin(TurnRequest(cid, ALICE, "second"))
    [e async for e in first.events()]
    with pytest.raises(DuplicateClientMessage):
        await h.orchestrator.begin(TurnRequest(cid, ALICE, "first again", client_message_id="m-1"))
    assert [m.content for m in await h.stored(cid) if m.role is Role.USER] == ["first"]


async def test_another_callers_conversation_is_not_found():
    h = Harness(ScriptedStrategy([answer("x")]))
    cid = await h.conversation()
    with pytest.raises(ConversationNotFound):
        await h.orchestrator.begin(TurnRequest(cid, Caller("mallory"), "hi"))


async def test_a_client_that_goes_away_interrupts_the_turn_and_frees_the_conversation():
    h = Harness(ScriptedStrategy([answer("a b c d e f", chunks=6), answer("later")]), loop_initial_rag=False)
    cid = await h.conversation()
    turn = await h.orchestrator.begin(TurnRequest(cid, ALICE, "hi"))
    stream = turn.events()
    assert [(await anext(stream)).type for _ in range(2)] == ["StatusUpdate", "ResponseChunk"]
    await stream.aclose()
    stored = await h.stored(cid)
    assert [m.role for m in stored] == [Role.USER]
    _, events = await h.turn(cid, "again")
    assert events[-1].type == "Completed"


async def test_anonymous_callers_get_answers_without_tools():
    h = Harness(ScriptedStrategy([answer("Hello.")]))
    anonymous = Caller("anonymous", ("anonymous",))
    cid = await h.conversation(anonymous)
    _, events = await h.turn(cid, caller=anonymous)
    assert h.strategy.requests[0][1] == [] and h.search.queries == []
    assert types(events) == ["StatusUpdate", "ResponseChunk", "Completed"]


async def test_the_user_messages_metadata_is_stored_with_it():
    h = Harness(ScriptedStrategy([answer("ok")]))
    cid = await h.conversation()
    await h.turn(cid, metadata={"screen": "orders"})
    assert [m.metadata for m in await h.stored(cid)] == [{"screen": "orders"}, None]


def test_schema_errors_follow_each_schema_object_not_a_stale_validator():
    from rag_orchestrator.tools.registry import schema_errors

    for round_ in range(300):  # past the identity cache's bound, with ids freed and reused
        wanted = "integer" if round_ % 2 else "string"
        schema = {"type": "object", "properties": {"x": {"type": wanted}}, "required": ["x"]}
        good = {"x": 1} if wanted == "integer" else {"x": "a"}
        bad = {"x": "a"} if wanted == "integer" else {"x": 1}
        assert schema_errors(schema, good) == []
        assert schema_errors(schema, bad) == [f"x: {bad['x']!r} is not of type '{wanted}'"]
