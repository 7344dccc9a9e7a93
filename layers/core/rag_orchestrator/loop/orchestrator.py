"""One chat turn: load the window, search, iterate model ↔ tools, persist, stream events.

`begin()` claims the turn (stores the user message, takes the conversation's turn lock) and so
raises 404/409 before any event is sent; `ActiveTurn.events()` then yields DESIGN.md's stream
events and always ends with exactly one Completed or Error.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, assert_never

import anyio

from rag_orchestrator.api.auth import Caller
from rag_orchestrator.domain import events as ev
from rag_orchestrator.domain.conversations import ConversationMessage
from rag_orchestrator.domain.messages import Message, Role, ToolCall, ToolResult
from rag_orchestrator.domain.text import scrub
from rag_orchestrator.errors import RagError
from rag_orchestrator.loop.citations import drawn_on
from rag_orchestrator.loop.finalizers import DirectFinalizer, Finalizer
from rag_orchestrator.loop.history import knowledge_message, well_formed
from rag_orchestrator.observability import logger, metrics, request_reference
from rag_orchestrator.providers import events as se
from rag_orchestrator.tools.base import ToolContext
from rag_orchestrator.tools.rag_search import NAME as RAG_SEARCH
from rag_orchestrator.tools.rag_search import format_passages

TURN_LEASE_SECONDS = 330  # longer than the streaming function's timeout, so a lost lock frees itself


@dataclass(frozen=True)
class TurnRequest:
    conversation_id: str
    caller: Caller
    message: str
    client_message_id: str | None = None
    context_type: str | None = None
    context: dict[str, Any] = field(default_factory=dict)
    mode: se.StreamingMode = se.StreamingMode.PROGRESSIVE


@dataclass
class TurnOutcome:
    """What a finished turn produced; FINAL_ONLY callers build their response from it."""

    content: str = ""
    message_id: str | None = None
    iterations: int = 0
    tokens: int = 0
    tool_calls: int = 0
    sources: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    failure: RagError | None = None  # the safe error a REST caller gets


@dataclass
class Toolset:
    """The tools offered for one turn, with the system prompt that goes with them."""

    names: list[str]
    definitions: list[dict[str, Any]]
    system_prompt: str


class Orchestrator:
    def __init__(
        self,
        *,
        context: Any,
        strategy: Any,
        registry: Any,
        settings: Any,
        choose_tools: Callable[[TurnRequest], Any],
        finalizer: Finalizer | None = None,
    ) -> None:
        self.context = context
        self.strategy = strategy
        self.registry = registry
        self.settings = settings
        self.choose_tools = choose_tools
        self.finalizer = finalizer or DirectFinalizer()

    async def begin(self, request: TurnRequest) -> ActiveTurn:
        """Store the user message and take the turn lock; raises ConversationNotFound or Conflict."""
        user = self.context.stored(
            request.conversation_id,
            Message(role=Role.USER, content=request.message),
            client_message_id=request.client_message_id,
        )
        await self.context.start_turn(
            request.conversation_id,
            request.caller.caller_id,
            user,
            request.client_message_id,
            lease_seconds=TURN_LEASE_SECONDS,
        )
        return ActiveTurn(self, request)


class ActiveTurn:
    def __init__(self, orchestrator: Orchestrator, request: TurnRequest) -> None:
        self.o = orchestrator
        self.request = request
        self.outcome = TurnOutcome()
        self._pending: list[ConversationMessage] = []
        self._passages: dict[tuple[str, int], dict[str, Any]] = {}
        self._finished = False

    def _event(self, cls: type, **fields: Any) -> Any:
        return cls(conversation_id=self.request.conversation_id, **fields)

    async def events(self) -> AsyncIterator[ev.StreamEvent]:
        try:
            async for event in self._run():
                yield event
        except (asyncio.CancelledError, GeneratorExit):
            await self._finish(interrupted=True)
            raise
        except Exception as exc:
            self.outcome.failure = exc if isinstance(exc, RagError) else RagError(_UNEXPECTED)
            self.outcome.error = self.outcome.failure.public_message
            logger.exception("turn failed", extra={"conversation_id": self.request.conversation_id})
            metrics.add_metric(name="TurnFailures", unit="Count", value=1)
            await self._finish(interrupted=True)
            yield self._event(ev.Error, error=self.outcome.error, details=request_reference())

    async def _run(self) -> AsyncIterator[ev.StreamEvent]:
        request, settings = self.request, self.o.settings
        toolset: Toolset = await self.o.choose_tools(request)
        window = await self.o.context.window(request.conversation_id)
        messages = [Message(role=Role.SYSTEM, content=toolset.system_prompt), *well_formed(window)]
        if settings.loop_initial_rag and RAG_SEARCH in toolset.names:
            yield self._event(ev.StatusUpdate, status="Searching the knowledge base")
            found = await self._initial_search(request.message)
            if found is None:
                yield self._event(
                    ev.StatusUpdate, status="Knowledge base unavailable", details="continuing without it"
                )
            elif found:
                messages.append(knowledge_message(found))
        tool_ctx = ToolContext(
            conversation_id=request.conversation_id,
            caller_id=request.caller.caller_id,
            roles=request.caller.roles,
            context_type=request.context_type,
            context=request.context,
        )
        final: str | None = None
        reasoning: str | None = None
        while final is None:
            iteration = self.outcome.iterations + 1
            allow_tools = iteration <= settings.loop_max_iterations and bool(toolset.definitions)
            if iteration == settings.loop_max_iterations + 1:
                yield self._event(
                    ev.StatusUpdate,
                    status="Iteration limit reached",
                    details="answering with what has been found so far",
                )
            ctx = se.IterationContext(
                conversation_id=request.conversation_id,
                iteration=iteration,
                max_iterations=settings.loop_max_iterations,
                streaming_mode=request.mode,
                allow_tools=allow_tools,
            )
            calls: list[ToolCall] = []
            async with aclosing(
                self.o.strategy.run_iteration(messages, toolset.definitions if allow_tools else [], ctx)
            ) as stream:
                async for item in stream:
                    match item:
                        case se.ContentChunk(content=text):
                            yield self._event(ev.ResponseChunk, content=text)
                        case se.StatusUpdate(status=status):
                            yield self._event(ev.StatusUpdate, status=status)
                        case se.ReasoningChunk() | se.ToolCallDetected():
                            pass  # reasoning never leaves; tool calls are announced when complete
                        case se.ToolCallsComplete(
                            tool_calls=tool_calls, assistant_content=text, reasoning=thought
                        ):
                            calls = list(tool_calls)
                            messages.append(
                                Message(
                                    role=Role.ASSISTANT,
                                    content=text or "",
                                    tool_calls=calls,
                                    reasoning=thought,
                                )
                            )
                        case se.FinalResponse(content=text, reasoning=thought):
                            final, reasoning = text, thought
                        case se.IterationComplete(usage=usage):
                            self.outcome.iterations = iteration
                            self.outcome.tokens += usage.total_tokens
                            self._record_assistant(messages, calls, usage.completion_tokens)
                        case _:
                            assert_never(item)
            if calls and not allow_tools:
                final = self._drop_unoffered_calls(messages)
            elif final is None and not calls:
                final = ""  # a model that neither answers nor calls a tool ends the turn
            if final is None:
                async for event in self._run_tools(calls, tool_ctx, toolset, messages):
                    yield event
        async for event in self._complete(final, reasoning):
            yield event

    def _drop_unoffered_calls(self, messages: list[Message]) -> str:
        """A model that calls tools when none were offered gets its words kept and its calls ignored."""
        last = messages.pop()
        self._pending.pop()
        self.outcome.tool_calls -= len(last.tool_calls or ())
        return last.content

    async def _initial_search(self, query: str) -> str | None:
        tool = self.o.registry.get(RAG_SEARCH)
        try:
            passages = await tool.search(query)
        except RagError as exc:
            logger.warning("initial knowledge search failed", extra={"error": exc.message})
            return None
        self._remember([p.model_dump(by_alias=True) for p in passages])
        return format_passages(passages) if passages else ""

    def _remember(self, passages: list[dict[str, Any]]) -> None:
        for p in passages:
            self._passages.setdefault((p["documentId"], p["chunkIndex"]), _source(p))

    def _record_assistant(self, messages: list[Message], calls: list[ToolCall], tokens: int) -> None:
        if not calls:
            return
        last = messages[-1]
        self._pending.append(self._stored(last, token_count=tokens))
        self.outcome.tool_calls += len(calls)

    async def _run_tools(
        self, calls: list[ToolCall], tool_ctx: ToolContext, toolset: Toolset, messages: list[Message]
    ) -> AsyncIterator[ev.StreamEvent]:
        for call in calls:
            try:
                arguments = call.parsed_arguments()
            except ValueError:
                arguments = {"_raw": scrub(call.function.arguments[:2000])}
            yield self._event(
                ev.ToolCallStart, tool_name=call.function.name, tool_call_id=call.id, arguments=arguments
            )
        results: list[ToolResult] = await self.o.registry.execute_all(calls, tool_ctx, toolset.names)
        for result in results:
            if result.success and result.tool_name == RAG_SEARCH:
                self._remember(result.metadata.get("passages", []))
            preview = result.metadata.get("preview")
            if preview is not None:
                yield self._event(ev.Preview, preview_type=preview["type"], payload=preview["payload"])
            content = result.for_model()
            yield self._event(
                ev.ToolCallResult,
                tool_name=result.tool_name,
                tool_call_id=result.tool_call_id,
                result=result.for_client(),
                success=result.success,
            )
            message = Message(
                role=Role.TOOL, content=content, tool_call_id=result.tool_call_id, tool_name=result.tool_name
            )
            messages.append(message)
            self._pending.append(self._stored(message))

    async def _complete(self, final: str, reasoning: str | None) -> AsyncIterator[ev.StreamEvent]:
        passages = list(self._passages.values())
        sources = drawn_on(final, passages) if passages else []
        tail = self.o.finalizer.epilogue(final, sources)
        if tail and self.request.mode is se.StreamingMode.PROGRESSIVE:
            yield self._event(ev.ResponseChunk, content=tail)
        content = final + tail
        answer = Message(role=Role.ASSISTANT, content=content, reasoning=reasoning)
        stored = self._stored(answer)
        self._pending.append(stored)
        self.outcome.content = content
        self.outcome.message_id = stored.message_id
        self.outcome.sources = sources
        await self._finish(interrupted=False)
        if sources:
            yield self._event(ev.Sources, sources=sources)
        metrics.add_metric(name="TurnsCompleted", unit="Count", value=1)
        metrics.add_metric(name="TurnTokens", unit="Count", value=self.outcome.tokens)
        yield self._event(
            ev.Completed,
            iterations_used=self.outcome.iterations,
            tokens_used=self.outcome.tokens,
            message_id=stored.message_id,
        )

    def _stored(self, message: Message, *, token_count: int | None = None) -> ConversationMessage:
        return self.o.context.stored(self.request.conversation_id, message, token_count)

    async def _finish(self, *, interrupted: bool) -> None:
        """Persist what the turn produced and release the lock, once, even while being cancelled."""
        if self._finished:
            return
        self._finished = True
        pending = self._pending if not interrupted else _complete_pairs(self._pending)
        with anyio.CancelScope(shield=True):
            try:
                await self.o.context.finish_turn(
                    self.request.conversation_id,
                    pending,
                    tool_calls=sum(len(m.tool_calls or ()) for m in pending),
                    tokens=self.outcome.tokens,
                    interrupted=interrupted,
                )
            except Exception:
                logger.exception("could not record the turn; releasing the lock")
                await self.o.context.abort_turn(self.request.conversation_id)


def _complete_pairs(pending: list[ConversationMessage]) -> list[ConversationMessage]:
    """Of an interrupted turn keep only tool calls whose every result was recorded."""
    answered = {m.tool_call_id for m in pending if m.role is Role.TOOL}
    return [
        m
        for m in pending
        if m.role is not Role.ASSISTANT or not m.tool_calls or {c.id for c in m.tool_calls} <= answered
    ]


def _source(passage: dict[str, Any]) -> dict[str, Any]:
    keys = ("documentId", "title", "chunkIndex", "score", "source", "tags", "snippet")
    return {key: passage.get(key) for key in keys if key in passage}


_UNEXPECTED = "The turn failed unexpectedly. Please try again."
