"""One chat turn once claimed: open it, search, iterate model ↔ tools, persist, stream events.

`Turn.events()` yields the stream events of docs/streams.md and always ends with exactly one
Completed or Error; `Turn.after()` then runs the after-turn work (loop/after_turn.py). The turn holds
its dependencies (loop/deps.py) and its state (loop/state.py) and runs its phases over them: the
opening (opening.py), each model call (model_call.py) ending in a typed next step (steps.py), a round
of tools (tool_round.py), a held call (approvals.py), the end (finish.py). A cancel or the deadline
cuts the awaited step short (loop/control.py): the turn ends with a Stop.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncGenerator, AsyncIterator
from functools import partial
from typing import assert_never

from rag_orchestrator.domain import events as ev
from rag_orchestrator.domain.messages import Message, Role
from rag_orchestrator.errors import RagError
from rag_orchestrator.loop.approvals import act_on, hold_call, needs_approval
from rag_orchestrator.loop.attachments import model_view
from rag_orchestrator.loop.compaction import after_summary, summary_message
from rag_orchestrator.loop.control import TurnControl, TurnStopped
from rag_orchestrator.loop.deps import TurnDeps
from rag_orchestrator.loop.finish import after, complete, persist
from rag_orchestrator.loop.history import app_data, well_formed, with_app_data
from rag_orchestrator.loop.model_call import call_model
from rag_orchestrator.loop.opening import initial_search, open_turn
from rag_orchestrator.loop.record import TurnRecord
from rag_orchestrator.loop.request import TurnRequest
from rag_orchestrator.loop.state import TurnState
from rag_orchestrator.loop.steps import (
    Continuation,
    FinalAnswer,
    HoldForApproval,
    ModelOutput,
    Question,
    RunTools,
    Stop,
    next_step,
)
from rag_orchestrator.loop.tool_round import run_tools, take_calls
from rag_orchestrator.loop.turn_spans import agent_attributes, record_prelude, totals
from rag_orchestrator.observability import logger, metrics, request_reference
from rag_orchestrator.tools.rag_search import NAME as RAG_SEARCH

UNEXPECTED = "The turn failed unexpectedly. Please try again."
CUT = "iteration limit reached: answering with what has been found"


class Turn:
    def __init__(self, deps: TurnDeps, state: TurnState) -> None:
        self.deps = deps
        self.state = state

    @property
    def turn_id(self) -> str:
        return self.state.turn_id

    @property
    def request(self) -> TurnRequest:
        return self.state.request

    @property
    def control(self) -> TurnControl:
        return self.state.control

    @property
    def record(self) -> TurnRecord:
        return self.state.record

    async def events(self) -> AsyncGenerator[ev.StreamEvent, None]:
        deps, state = self.deps, self.state
        traced = deps.tracer.enabled  # off: no span attributes are built at all
        with deps.tracer.span("invoke_agent", agent_attributes(deps, state) if traced else {}) as span:
            try:
                try:
                    async for event in self._run():
                        yield event
                except TurnStopped as stopped:  # cancelled, or out of time: keep what was answered
                    async for event in complete(deps, state, Stop(stopped.reason, "".join(state.partial))):
                        yield event
            except (asyncio.CancelledError, GeneratorExit):
                span.fail("cancelled")
                await persist(deps, state, interrupted=True)
                raise
            except Exception as exc:
                failure = exc if isinstance(exc, RagError) else RagError(UNEXPECTED)
                state.record.failure = failure
                span.fail(type(exc).__name__)
                logger.exception("turn failed", extra={"conversation_id": state.request.conversation_id})
                metrics.add_metric(name="TurnFailures", unit="Count", value=1)
                await persist(deps, state, interrupted=True)
                yield state.events.error(failure.public_message, request_reference())
            finally:
                if state.prelude is not None:
                    state.prelude.cancel()
                state.control.close()
                if traced:
                    span.set(totals(state.record))

    async def after(self) -> None:
        await after(self.deps, self.state)

    async def _run(self) -> AsyncIterator[ev.StreamEvent]:
        deps, state = self.deps, self.state
        config, emit, record = deps.config, state.events, state.record
        context, toolset = await open_turn(deps, state)
        state.fence = toolset.fence
        prelude = state.prelude
        assert prelude is not None  # open_turn starts a continuation's
        prelude.follow_up(context.messages)  # a follow-up is searched with its conversation
        state.context, record.titled = context, context.titled
        record.summary, record.summarized_through = context.summary, context.summarized_through
        recent = after_summary(context.messages, context.summarized_through)
        if not context.memory:  # a temporary chat: its searches and its after-turn work leave memory alone
            state.request = dataclasses.replace(state.request, memory=False)
        async for status, details in state.attachments.statuses(state.control.wait):
            yield emit.status(status, details)
        record.remember(state.attachments.passages())
        opening, chars = state.opening, config.attachment_chars
        match opening:
            case Question(message=question, revision=revision):
                window = record.history = revision.history(recent)
                state.messages = model_view(
                    window, question.message_id, state.attachments, chars, toolset.fence
                )
            case Continuation(decided=decided):  # the held call's result first
                record.history = recent
                state.messages = model_view(recent, "", state.attachments, chars, toolset.fence)
                async for event in act_on(deps, state, decided, toolset.names):
                    yield event
            case _:
                assert_never(opening)
        system = Message(role=Role.SYSTEM, content=toolset.system_prompt)
        summary = [summary_message(context.summary, toolset.fence)] if context.summary else []
        state.messages = [system, *summary, *well_formed(state.messages)]
        found = None
        if prelude.found is not None and RAG_SEARCH in toolset.names:
            yield emit.status("Searching the knowledge base")
            found = await initial_search(state, prelude.found)
            if found is None:
                yield emit.status("Knowledge base unavailable", "continuing without it")
        request = state.request
        data = app_data(toolset.fence, request.context_type, request.context, found)
        state.messages = with_app_data(state.messages, data)
        if deps.tracer.enabled:
            record_prelude(deps, prelude)
        limit, after_tools = config.max_iterations, False
        waits = partial(needs_approval, tools=deps.tools, offered=toolset.names)
        while True:
            iteration = record.iterations + 1
            last_call = iteration >= limit
            offered = toolset.definitions if not last_call else []
            yield emit.status(f"Iteration {iteration} of {limit}", CUT if last_call and after_tools else None)
            output = ModelOutput()
            async for item in call_model(deps, state, offered, iteration):
                if isinstance(item, ModelOutput):
                    output = item
                else:
                    yield item
            step = next_step(
                output,
                tools_offered=bool(offered),
                last_call=last_call,
                after_tools=after_tools,
                needs_approval=waits,
            )
            tokens = output.usage.completion_tokens
            match step:
                case RunTools():
                    take_calls(state, step, tokens)
                    async for event in run_tools(deps, state, step.calls, toolset.names):
                        yield event
                    after_tools = True
                case HoldForApproval():
                    take_calls(state, step, tokens)
                    async for event in run_tools(deps, state, step.run, toolset.names, step.refused):
                        yield event
                    async for event in hold_call(deps, state, step):
                        yield event
                    return
                case FinalAnswer() | Stop():
                    async for event in complete(deps, state, step):
                        yield event
                    return
                case _:
                    assert_never(step)
