"""One chat turn: load the window, search, iterate model ↔ tools, persist, stream events.

`begin()` claims the turn (stores the user message, takes the conversation's turn lock) and so
raises 404/409 before any event is sent; `ActiveTurn.events()` then yields the stream events of
docs/streams.md and always ends with exactly one Completed or Error; the route then calls
`ActiveTurn.after()` for the after-turn work (conversation memory). Each model call ends in a
typed next step (loop/steps.py); the turn's messages, passages and counters are its TurnRecord.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import aclosing
from typing import Any, assert_never

import anyio

from rag_orchestrator.config import Settings
from rag_orchestrator.conversations.store import TurnContext, TurnStore
from rag_orchestrator.domain import events as ev
from rag_orchestrator.domain.conversations import ConversationMessage
from rag_orchestrator.domain.messages import Message, Role, ToolCall
from rag_orchestrator.domain.passage_formats import format_passages
from rag_orchestrator.domain.passages import SourceWithSnippet
from rag_orchestrator.domain.text import scrub
from rag_orchestrator.errors import RagError
from rag_orchestrator.loop.attachments import AttachmentReading, AttachmentSource, model_view
from rag_orchestrator.loop.finalizers import DirectFinalizer, Finalizer
from rag_orchestrator.loop.history import knowledge_message, well_formed
from rag_orchestrator.loop.ports import AfterTurn, KnowledgeSearch, ToolChooser, Tools, Toolset, TurnRequest
from rag_orchestrator.loop.record import TurnRecord
from rag_orchestrator.loop.steps import FinalAnswer, ModelResponse, RunTools, Stop, next_step
from rag_orchestrator.observability import logger, metrics, request_reference
from rag_orchestrator.providers import events as se
from rag_orchestrator.providers.strategies import ModelStrategy
from rag_orchestrator.tools.base import ToolContext
from rag_orchestrator.tools.rag_search import NAME as RAG_SEARCH

TURN_LEASE_SECONDS = 330  # longer than the streaming function's timeout, so a lost lock frees itself
UNEXPECTED = "The turn failed unexpectedly. Please try again."
AFTER_TURN_SECONDS = 5.0  # each after-turn hook's share of the time after the terminal event


class Orchestrator:
    def __init__(
        self,
        *,
        store: TurnStore,
        strategy: ModelStrategy,
        tools: Tools,
        settings: Settings,
        choose_tools: ToolChooser,
        search: KnowledgeSearch | None = None,
        finalizer: Finalizer | None = None,
        after_turn: Sequence[AfterTurn] = (),
        attachments: AttachmentSource | None = None,
    ) -> None:
        self.store = store
        self.strategy = strategy
        self.tools = tools
        self.settings = settings
        self.choose_tools = choose_tools
        self.search = search
        self.finalizer = finalizer or DirectFinalizer()
        self.after_turn = tuple(after_turn)
        self.attachments = attachments

    async def begin(self, request: TurnRequest) -> ActiveTurn:
        """Store the user message and take the turn lock; raises ConversationNotFound or Conflict
        (and, checked first, AttachmentNotFound or AttachmentNotReady)."""
        attachments = await AttachmentReading.check(self.attachments, request)
        user = ConversationMessage.of(
            request.conversation_id,
            Message(role=Role.USER, content=request.message),
            client_message_id=request.client_message_id,
            metadata=request.metadata,
            attachment_ids=list(request.attachment_ids),
        )
        await self.store.start_turn(
            request.conversation_id,
            request.caller.caller_id,
            user,
            request.client_message_id,
            lease_seconds=TURN_LEASE_SECONDS,
        )
        return ActiveTurn(self, request, user, attachments)


class ActiveTurn:
    def __init__(
        self,
        orchestrator: Orchestrator,
        request: TurnRequest,
        question: ConversationMessage,
        attachments: AttachmentReading | None = None,
    ) -> None:
        self.o = orchestrator
        self.request = request
        self.question = question
        self.attachments = attachments or AttachmentReading(orchestrator.attachments, [])
        self.record = TurnRecord(request.conversation_id)
        self.context: TurnContext | None = None  # what the turn read at its start
        self._finished = False

    def _event(self, cls: type[Any], **fields: Any) -> Any:
        return cls(conversation_id=self.request.conversation_id, **fields)

    async def events(self) -> AsyncGenerator[ev.StreamEvent, None]:
        try:
            async for event in self._run():
                yield event
        except (asyncio.CancelledError, GeneratorExit):
            await self._finish(interrupted=True)
            raise
        except Exception as exc:
            failure = exc if isinstance(exc, RagError) else RagError(UNEXPECTED)
            self.record.failure = failure
            logger.exception("turn failed", extra={"conversation_id": self.request.conversation_id})
            metrics.add_metric(name="TurnFailures", unit="Count", value=1)
            await self._finish(interrupted=True)
            yield self._event(ev.Error, error=failure.public_message, details=request_reference())

    async def _run(self) -> AsyncIterator[ev.StreamEvent]:
        request, settings = self.request, self.o.settings
        toolset = await self.o.choose_tools(request)
        self.context = await self.o.store.context(
            request.conversation_id, settings.conversation_rolling_window
        )
        async for status, details in self.attachments.statuses():
            yield self._event(ev.StatusUpdate, status=status, details=details)
        self.record.remember(self.attachments.passages())
        limit = settings.attachment_context_max_chars
        history = well_formed(
            model_view(self.context.messages, self.question.message_id, self.attachments, limit)
        )
        messages = [Message(role=Role.SYSTEM, content=toolset.system_prompt), *history]
        if settings.loop_initial_rag and self.o.search is not None and RAG_SEARCH in toolset.names:
            yield self._event(ev.StatusUpdate, status="Searching the knowledge base")
            found = await self._initial_search(self.o.search, request)
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
        limit, after_tools = settings.loop_max_iterations, False
        while True:
            iteration = self.record.iterations + 1
            last_call = iteration >= limit
            offered = toolset.definitions if not last_call else []
            yield self._iteration_status(iteration, limit, cut=last_call and after_tools)
            response = ModelResponse()
            async for item in self._call_model(messages, offered, iteration):
                if isinstance(item, ModelResponse):
                    response = item
                else:
                    yield item
            step = next_step(
                response, tools_offered=bool(offered), last_call=last_call, after_tools=after_tools
            )
            match step:
                case RunTools():
                    assistant = Message(
                        role=Role.ASSISTANT,
                        content=step.content,
                        tool_calls=list(step.calls),
                        reasoning=step.reasoning,
                    )
                    messages.append(assistant)
                    self.record.add(assistant, response.usage.completion_tokens)
                    async for event in self._run_tools(step.calls, tool_ctx, toolset, messages):
                        yield event
                    after_tools = True
                case FinalAnswer():
                    async for event in self._complete(step.content, step.reasoning, step.reason):
                        yield event
                    return
                case Stop():
                    async for event in self._complete(step.content, None, step.reason):
                        yield event
                    return
                case _:
                    assert_never(step)

    def _iteration_status(self, iteration: int, limit: int, *, cut: bool) -> ev.StatusUpdate:
        details = "iteration limit reached: answering with what has been found" if cut else None
        status: ev.StatusUpdate = self._event(
            ev.StatusUpdate, status=f"Iteration {iteration} of {limit}", details=details
        )
        return status

    async def _call_model(
        self, messages: list[Message], tools: list[dict[str, Any]], iteration: int
    ) -> AsyncIterator[ev.StreamEvent | ModelResponse]:
        """Stream one model call's text as ResponseChunk events, then yield what the call produced."""
        ctx = se.IterationContext(
            conversation_id=self.request.conversation_id,
            iteration=iteration,
            max_iterations=self.o.settings.loop_max_iterations,
            streaming_mode=self.request.mode,
            allow_tools=bool(tools),
        )
        response = ModelResponse()
        async with aclosing(self.o.strategy.run_iteration(messages, tools, ctx)) as stream:
            async for item in stream:
                match item:
                    case se.ContentChunk(content=text):
                        yield self._event(ev.ResponseChunk, content=text)
                    case se.ToolCallsComplete(tool_calls=calls, assistant_content=text, reasoning=thought):
                        response.calls, response.content, response.reasoning = calls, text or "", thought
                    case se.FinalResponse(content=text, reasoning=thought):
                        response.content, response.reasoning = text, thought
                    case se.IterationComplete(usage=usage):
                        response.usage = usage
                    case _:
                        assert_never(item)
        self.record.iterations = iteration
        self.record.tokens += response.usage.total_tokens
        yield response

    async def _initial_search(self, search: KnowledgeSearch, request: TurnRequest) -> str | None:
        try:
            passages = await search.search(request.message, caller_id=request.caller.caller_id)
        except RagError as exc:
            logger.warning("initial knowledge search failed", extra={"error": exc.message})
            return None
        self.record.remember(passages)
        return format_passages(passages) if passages else ""

    async def _run_tools(
        self, calls: tuple[ToolCall, ...], tool_ctx: ToolContext, toolset: Toolset, messages: list[Message]
    ) -> AsyncIterator[ev.StreamEvent]:
        for call in calls:
            try:
                arguments = call.parsed_arguments()
            except ValueError:
                arguments = {"_raw": scrub(call.function.arguments[:2000])}
            yield self._event(
                ev.ToolCallStart, tool_name=call.function.name, tool_call_id=call.id, arguments=arguments
            )
        for result in await self.o.tools.execute_all(calls, tool_ctx, toolset.names):
            if result.success:
                self.record.remember(result.passages)
            if result.preview is not None:
                yield self._event(
                    ev.Preview, preview_type=result.preview.type, payload=result.preview.payload
                )
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
            self.record.add(message, success=result.success)

    async def _complete(
        self, content: str, reasoning: str | None, reason: ev.FinishReason
    ) -> AsyncIterator[ev.StreamEvent]:
        record = self.record
        sources = record.sources_of(content)
        tail = self.o.finalizer.epilogue(content, sources)
        if tail and self.request.mode is se.StreamingMode.PROGRESSIVE:
            yield self._event(ev.ResponseChunk, content=tail)
        stored = record.add(Message(role=Role.ASSISTANT, content=content + tail, reasoning=reasoning))
        record.content, record.message_id = stored.content, stored.message_id
        record.sources, record.finish_reason = sources, reason
        await self._finish(interrupted=False)
        if sources:
            yield self._event(ev.Sources, sources=[SourceWithSnippet.of(p) for p in sources])
        metrics.add_metric(name="TurnsCompleted", unit="Count", value=1)
        metrics.add_metric(name="TurnTokens", unit="Count", value=record.tokens)
        yield self._event(
            ev.Completed,
            iterations_used=record.iterations,
            tokens_used=record.tokens,
            message_id=stored.message_id,
            finish_reason=reason,
        )

    async def after(self) -> None:
        """The after-turn hooks, once the terminal event is out; shielded from a client gone meanwhile.
        A hook's failure is logged and never reaches the turn."""
        if not self._finished:
            return
        with anyio.CancelScope(shield=True):
            for hook in self.o.after_turn:
                # Bounded: the response (and a Lambda invocation) ends only when this returns.
                with anyio.move_on_after(AFTER_TURN_SECONDS) as bounded:
                    try:
                        await hook(self.request, self.record)
                    except Exception:
                        logger.exception("after-turn work failed", extra={"hook": type(hook).__name__})
                if bounded.cancelled_caught:
                    logger.warning("after-turn work cut off", extra={"hook": type(hook).__name__})

    async def _finish(self, *, interrupted: bool) -> None:
        """Persist what the turn produced and release the lock, once, even while being cancelled."""
        if self._finished:
            return
        self._finished = True
        stored = self.record.to_store(interrupted)
        with anyio.CancelScope(shield=True):
            try:
                model = self.o.strategy.metadata.model
                audit = self.record.audit(
                    self.request, self.question, stored, model=model, interrupted=interrupted
                )
                await self.o.store.finish_turn(
                    self.request.conversation_id,
                    stored,
                    tool_calls=sum(len(m.tool_calls or ()) for m in stored),
                    tokens=self.record.tokens,
                    interrupted=interrupted,
                    audit=audit,
                    context=self.context,
                )
            except Exception:
                logger.exception("could not record the turn; releasing the lock")
                await self.o.store.abort_turn(self.request.conversation_id)
