"""One chat turn once claimed: load the context, search, iterate model ↔ tools, persist, stream events.

`ActiveTurn.events()` yields the stream events of docs/streams.md and always ends with exactly one
Completed or Error; `ActiveTurn.after()` then runs the after-turn work (loop/after_turn.py). Each
model call ends in a typed next step (loop/steps.py); the turn's messages, passages and counters are
its TurnRecord. A cancel or the deadline cuts the awaited step short (loop/control.py): the turn
ends with a Stop.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, assert_never

from rag_orchestrator.conversations.store import TurnContext
from rag_orchestrator.conversations.versions import PLAIN, Revision
from rag_orchestrator.domain import events as ev
from rag_orchestrator.domain.approvals import NOT_RUN, Resolution
from rag_orchestrator.domain.budgets import Spend
from rag_orchestrator.domain.conversations import ConversationMessage
from rag_orchestrator.domain.ids import sortable_id
from rag_orchestrator.domain.messages import Message, Role, ToolCall
from rag_orchestrator.domain.passages import SourceWithSnippet
from rag_orchestrator.domain.text import scrub
from rag_orchestrator.errors import RagError
from rag_orchestrator.loop.approvals import ApprovalSteps, split_calls
from rag_orchestrator.loop.attachments import AttachmentReading, model_view
from rag_orchestrator.loop.control import TurnControl, TurnStopped
from rag_orchestrator.loop.history import knowledge_message, well_formed
from rag_orchestrator.loop.ports import TurnRequest
from rag_orchestrator.loop.prelude import Prelude
from rag_orchestrator.loop.record import TurnRecord
from rag_orchestrator.loop.steps import FinalAnswer, ModelResponse, RunTools, Stop, next_step
from rag_orchestrator.loop.turn_finish import TurnFinish
from rag_orchestrator.loop.turn_start import TurnStart
from rag_orchestrator.observability import logger, metrics, request_reference
from rag_orchestrator.providers import events as se
from rag_orchestrator.tools.base import ToolContext, failure
from rag_orchestrator.tools.rag_search import NAME as RAG_SEARCH

if TYPE_CHECKING:  # the orchestrator holds the parts a turn uses
    from rag_orchestrator.loop.orchestrator import Orchestrator

UNEXPECTED = "The turn failed unexpectedly. Please try again."


class ActiveTurn(ApprovalSteps, TurnStart, TurnFinish):
    def __init__(
        self,
        orchestrator: Orchestrator,
        request: TurnRequest,
        question: ConversationMessage | None,
        control: TurnControl,
        prelude: Prelude | None,
        attachments: AttachmentReading | None = None,
        revision: Revision = PLAIN,
        *,
        spend: Spend | None = None,
        decided: Resolution | None = None,
    ) -> None:
        """`question` None: a continuation, which acts on `decided` first (approvals.py)."""
        self.o = orchestrator
        self.request = request
        self.question = question
        self.revision = revision  # a regenerate or an edit: the exchange the turn replaces
        self.turn_id = sortable_id()
        self.control = control
        self.prelude = prelude  # None for a continuation: started once its question is read
        self.attachments = attachments or AttachmentReading(orchestrator.attachments, [])
        self.spend = spend
        self.record = TurnRecord(request.conversation_id, decided=decided)
        self.context: TurnContext | None = None  # what the turn read at its start
        self._partial: list[str] = []  # the text streamed by the current model call
        self._finished = False

    def _event(self, cls: type[Any], **fields: Any) -> Any:
        return cls(conversation_id=self.request.conversation_id, turn_id=self.turn_id, **fields)

    async def events(self) -> AsyncGenerator[ev.StreamEvent, None]:
        try:
            try:
                async for event in self._run():
                    yield event
            except TurnStopped as stopped:  # cancelled, or out of time: keep what was answered
                step = Stop(stopped.reason, "".join(self._partial))
                async for event in self._complete(step.content, None, step.reason, cut=True):
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
        finally:
            if self.prelude is not None:
                self.prelude.cancel()
            self.control.close()

    async def _run(self) -> AsyncIterator[ev.StreamEvent]:
        request, settings = self.request, self.o.settings
        context, toolset = await self._read()
        request, prelude = self.request, self.prelude
        assert prelude is not None  # _read() starts a continuation's
        prelude.follow_up(context.messages)  # a follow-up is searched with its conversation
        self.context, self.record.titled = context, context.titled
        async for status, details in self.attachments.statuses(self.control.wait):
            yield self._event(ev.StatusUpdate, status=status, details=details)
        self.record.remember(self.attachments.passages())
        window, question = self.revision.history(context.messages), self.question
        asked = question.message_id if question is not None else ""
        history = model_view(window, asked, self.attachments, settings.attachment_context_max_chars)
        tool_ctx = request.tool_context(self.control.deadline)
        if question is None and self.record.decided is not None:  # the held call's result first
            async for event in self._act_on(self.record.decided, tool_ctx, toolset.names, history):
                yield event
        messages = [Message(role=Role.SYSTEM, content=toolset.system_prompt), *well_formed(history)]
        if prelude.found is not None and RAG_SEARCH in toolset.names:
            yield self._event(ev.StatusUpdate, status="Searching the knowledge base")
            found = await self._initial_search(prelude.found)
            if found is None:
                yield self._event(
                    ev.StatusUpdate, status="Knowledge base unavailable", details="continuing without it"
                )
            elif found:
                messages.append(knowledge_message(found))
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
                    held, run, refused = split_calls(step.calls, self.o.tools, toolset.names)
                    async for event in self._run_tools(run, tool_ctx, toolset.names, messages, refused):
                        yield event
                    if held is not None:
                        async for event in self._hold(held, settings.approval_ttl_minutes):
                            yield event
                        return
                    after_tools = True
                case FinalAnswer():
                    async for event in self._complete(step.content, step.reasoning, step.reason):
                        yield event
                    return
                case Stop():
                    async for event in self._complete(step.content, None, step.reason, cut=True):
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
            # Chunks in both modes, so a turn cut short keeps its text; FINAL_ONLY sends none on.
            streaming_mode=se.StreamingMode.PROGRESSIVE,
            allow_tools=bool(tools),
        )
        response, wait = ModelResponse(), self.control.wait
        progressive = self.request.mode is se.StreamingMode.PROGRESSIVE
        self._partial = []
        async with aclosing(self.o.strategy.run_iteration(messages, tools, ctx)) as stream:
            while (item := await wait(anext(stream, None))) is not None:
                match item:
                    case se.ContentChunk(content=text):
                        self._partial.append(text)
                        if progressive:
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

    async def _run_tools(
        self,
        calls: Sequence[ToolCall],
        tool_ctx: ToolContext,
        allowed: Sequence[str],
        messages: list[Message],
        refused: Sequence[ToolCall] = (),
    ) -> AsyncIterator[ev.StreamEvent]:
        """Run `calls`; `refused` ones (approval calls beyond the one held) are answered not run."""
        for call in [*calls, *refused]:
            try:
                arguments = call.parsed_arguments()
            except ValueError:
                arguments = {"_raw": scrub(call.function.arguments[:2000])}
            yield self._event(
                ev.ToolCallStart, tool_name=call.function.name, tool_call_id=call.id, arguments=arguments
            )
        results = await self.control.wait(self.o.tools.execute_all(calls, tool_ctx, allowed)) if calls else []
        for result in [*results, *(failure(c.function.name, NOT_RUN, c.id) for c in refused)]:
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
        self, content: str, reasoning: str | None, reason: ev.FinishReason, *, cut: bool = False
    ) -> AsyncIterator[ev.StreamEvent]:
        """End the turn with its answer; a `cut` one keeps its partial text, marked interrupted."""
        record, answers = self.record, reason != "awaiting_approval"
        sources = record.sources_of(content)
        tail = "" if cut or not answers else self.o.finalizer.epilogue(content, sources)
        if tail and self.request.mode is se.StreamingMode.PROGRESSIVE:
            yield self._event(ev.ResponseChunk, content=tail)
        if answers and (content or not cut):
            stored = record.add(Message(role=Role.ASSISTANT, content=content + tail, reasoning=reasoning))
            record.content, record.message_id = stored.content, stored.message_id
        record.sources, record.finish_reason = sources, reason
        await self._finish(interrupted=cut)
        if sources:
            yield self._event(ev.Sources, sources=[SourceWithSnippet.of(p) for p in sources])
        metrics.add_metric(name="TurnsCompleted", unit="Count", value=1)
        metrics.add_metric(name="TurnTokens", unit="Count", value=record.tokens)
        yield self._event(
            ev.Completed,
            iterations_used=record.iterations,
            tokens_used=record.tokens,
            message_id=record.message_id,
            finish_reason=reason,
        )
