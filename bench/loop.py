"""Loop overhead: one turn (a tool call, then an answer) with a scripted model and no I/O.

The same turn through this project's Orchestrator, LangGraph's `create_react_agent` and
pydantic-ai's `Agent`. Each gets a model that answers instantly, one trivial async tool and an
agent built once; only the turn is timed. Ours also stores the turn (in-memory store) and yields
its stream events; the initial knowledge search is off so all three make the same two model calls.
After each of our turns its metrics are published, untimed, as the app publishes a request's once its
response is complete (a row of their own): a turn starts with none, as a request does.
The scripted strategy comes from tests/fakes/scripted.py (the loop's unit tests drive it too).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import warnings
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

from bench.report import Section

QUESTION = "How do I run the tests?"
ANSWER = "Run make test."
TOOL_RESULT = "make test runs the suite"
GOAL_MS = 0.25
PEER_GOAL = 15  # LangGraph's turn at least this many times ours, in the same run

STORAGE_CALLS = frozenset({"start_turn", "context", "finish_turn", "abort_turn"})

Turn = Callable[[], Awaitable[Any]]


class TimedStore:
    """The conversation store, adding up the time spent awaiting its storage calls.

    Each timed call is wrapped once, when first looked up, and kept: the harness adds two clock
    readings to a storage call, not a closure built per call (the peers have no such wrapper)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.spent = 0.0

    def __getattr__(self, name: str) -> Any:  # only for names not set on the instance yet
        attribute = getattr(self.inner, name)
        if name not in STORAGE_CALLS:
            return attribute

        async def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await attribute(*args, **kwargs)
            finally:
                self.spent += time.perf_counter() - started

        setattr(self, name, timed)
        return timed


class LookupTool:
    """The trivial tool every framework gets: returns a constant."""

    name = "lookup"
    description = "Look something up"
    parameters: ClassVar[dict] = {
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
    }

    async def execute(self, arguments: dict[str, Any], ctx: Any) -> Any:
        from rag_orchestrator.domain.messages import ToolResult

        return ToolResult(tool_call_id="", tool_name=self.name, result=TOOL_RESULT)


turn_storage: list[list[float]] = []  # per ours() instance: ms spent in storage calls, per turn
turn_flushes: list[list[float]] = []  # per ours() instance: ms publishing its metrics after each turn


def ours(tracer: Any = None) -> Turn:
    """Our turn; with `tracer`, traced by it (bench/tracing.py)."""
    from rag_orchestrator.conversations.in_process import InProcessStore
    from rag_orchestrator.domain.callers import Caller
    from rag_orchestrator.domain.conversations import Conversation
    from rag_orchestrator.loop.request import TurnRequest
    from rag_orchestrator.observability import flush_metrics
    from tests.fakes.scripted import ScriptedStrategy, answer, call, scripted_orchestrator, tool_calls

    store = TimedStore(InProcessStore())
    strategy = ScriptedStrategy([tool_calls(call("lookup", '{"query": "tests"}')), answer(ANSWER)])
    orchestrator = scripted_orchestrator(strategy, store=store, tools=[LookupTool()])
    if tracer is not None:
        orchestrator.deps = dataclasses.replace(orchestrator.deps, tracer=tracer)
    caller = Caller("bench")
    storage: list[float] = []
    turn_storage.append(storage)
    flushes: list[float] = []
    turn_flushes.append(flushes)

    async def turn() -> Any:
        strategy.requests.clear()
        created = await store.create(Conversation(caller_id=caller.caller_id))
        request = TurnRequest(conversation_id=created.conversation_id, caller=caller, message=QUESTION)
        store.spent = 0.0
        started = time.perf_counter()
        active = await orchestrator.begin(request)
        events = [event async for event in active.events()]
        elapsed = time.perf_counter() - started
        assert events[-1].type == "Completed" and active.record.tool_calls == 1, events[-1]
        storage.append(store.spent * 1000)
        # The app publishes a request's metrics once its response is complete (MetricsFlushMiddleware):
        # each turn starts with none, as a request does, rather than with the last 100 turns' values.
        published = time.perf_counter()
        flush_metrics()
        flushes.append((time.perf_counter() - published) * 1000)
        return elapsed

    return turn


def langgraph() -> Turn:
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool

    with warnings.catch_warnings():  # create_react_agent is deprecated in favour of langchain's
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent

    class ScriptedChatModel(BaseChatModel):
        """A tool call first, the answer once the tool's result is in the messages."""

        @property
        def _llm_type(self) -> str:
            return "scripted"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _reply(self, messages: list[Any]) -> ChatResult:
            if isinstance(messages[-1], ToolMessage):
                message = AIMessage(content=ANSWER)
            else:
                message = AIMessage(
                    content="",
                    tool_calls=[{"name": "lookup", "args": {"query": "tests"}, "id": "call_lookup"}],
                )
            return ChatResult(generations=[ChatGeneration(message=message)])

        def _generate(self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kw: Any):
            return self._reply(messages)

        async def _agenerate(self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kw: Any):
            return self._reply(messages)

    @tool
    async def lookup(query: str) -> str:
        """Look something up."""
        return TOOL_RESULT

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = create_react_agent(ScriptedChatModel(), [lookup])

    async def turn() -> Any:
        started = time.perf_counter()
        state = await graph.ainvoke({"messages": [("user", QUESTION)]})
        elapsed = time.perf_counter() - started
        assert state["messages"][-1].content == ANSWER and len(state["messages"]) == 4
        return elapsed

    return turn


def pydantic_ai() -> Turn:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        if any(isinstance(part, ToolReturnPart) for part in messages[-1].parts):
            return ModelResponse(parts=[TextPart(ANSWER)])
        return ModelResponse(parts=[ToolCallPart("lookup", {"query": "tests"}, tool_call_id="call_lookup")])

    agent = Agent(FunctionModel(model))

    @agent.tool_plain
    async def lookup(query: str) -> str:
        """Look something up."""
        return TOOL_RESULT

    async def turn() -> Any:
        started = time.perf_counter()
        result = await agent.run(QUESTION)
        elapsed = time.perf_counter() - started
        assert result.output == ANSWER
        return elapsed

    return turn


def openai_agents() -> Turn:
    from agents import Agent, RunConfig, Runner, function_tool
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    class ScriptedModel(Model):
        """A tool call first, the answer once the tool's output is in the input."""

        async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kw: Any) -> Any:
            if isinstance(input, list) and any(
                isinstance(item, dict) and item.get("type") == "function_call_output" for item in input
            ):
                text = ResponseOutputText(text=ANSWER, type="output_text", annotations=[])
                item: Any = ResponseOutputMessage(
                    id="msg", content=[text], role="assistant", status="completed", type="message"
                )
            else:
                item = ResponseFunctionToolCall(
                    call_id="call_lookup", name="lookup", arguments='{"query": "tests"}', type="function_call"
                )
            return ModelResponse(output=[item], usage=Usage(), referenceable_id=None)

        def stream_response(self, *args: Any, **kw: Any) -> Any:
            raise NotImplementedError

    @function_tool
    async def lookup(query: str) -> str:
        """Look something up."""
        return TOOL_RESULT

    agent = Agent(name="bench", model=ScriptedModel(), tools=[lookup])
    config = RunConfig(tracing_disabled=True)  # as ours and the others: nothing exported

    async def turn() -> Any:
        started = time.perf_counter()
        result = await Runner.run(agent, QUESTION, run_config=config)
        elapsed = time.perf_counter() - started
        assert result.final_output == ANSWER, result.final_output
        return elapsed

    return turn


CONTENDERS: dict[str, Callable[[], Turn]] = {
    "rag_orchestrator": ours,
    "langgraph create_react_agent": langgraph,
    "pydantic-ai Agent": pydantic_ai,
    "openai-agents Runner": openai_agents,
}


async def _measure(turn: Turn, warmup: int, runs: int) -> list[float]:
    for _ in range(warmup):
        await turn()
    return [await turn() * 1000 for _ in range(runs)]


def run(quick: bool = False) -> Section:
    section = Section(
        "loop", packages=["langgraph", "langchain-core", "pydantic-ai-slim", "openai-agents", "pydantic"]
    )
    runs, warmup = (200, 30) if quick else (2000, 200)
    medians: dict[str, float] = {}

    async def main() -> None:
        for name, build in CONTENDERS.items():
            turn = build()
            samples = await _measure(turn, warmup, runs)
            figure = section.add(name, "ms", samples)
            medians[name] = figure.median
            if name == "rag_orchestrator":
                figure.goal, figure.met = f"<= {GOAL_MS} ms median", figure.median <= GOAL_MS
                storage = turn_storage[-1][-runs:]
                section.add("  of which storage calls (in-memory store, on the event loop)", "ms", storage)
                alone = [total - spent for total, spent in zip(samples, storage, strict=True)]
                section.add("  of which the loop itself (turn minus storage calls)", "ms", alone)

    asyncio.run(main())
    base, alone = medians["rag_orchestrator"], section.figures[2].median
    section.details["ratios of medians"] = [
        {
            "contender": name,
            "median ms": round(value, 3),
            "/ our turn": f"{value / base:.1f}x",
            "/ our loop alone": f"{value / alone:.1f}x",
        }
        for name, value in medians.items()
    ]
    for figure in section.figures[3:]:
        figure.note = f"{figure.median / base:.1f}x ours"
    under = medians["langgraph create_react_agent"] / base
    figure = section.add("langgraph's turn ÷ ours (medians, this run)", "ratio", under)
    figure.goal, figure.met = f">= {PEER_GOAL}x", under >= PEER_GOAL
    section.add(
        "  per request, after our turn: its metrics published (the app's middleware, after the stream)",
        "ms",
        turn_flushes[-1][-runs:],
    )
    return section
