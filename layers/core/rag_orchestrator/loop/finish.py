"""A turn's end: its answer (framed by the finalizer's prologue and epilogue), its sources and Completed event; what it
produced, its audit record and its tokens stored in the one write that releases its lock; the
after-turn hooks once that is done."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import assert_never

import anyio

from rag_orchestrator.conversations.turn_data import TurnOutcome
from rag_orchestrator.domain import events as ev
from rag_orchestrator.domain.base import utcnow
from rag_orchestrator.domain.messages import Message, Role
from rag_orchestrator.domain.usage import Prices, UsageLine, cost
from rag_orchestrator.errors import RagError, StorageUnavailable
from rag_orchestrator.loop.after_turn import run_after_turn
from rag_orchestrator.loop.deps import TurnDeps
from rag_orchestrator.loop.record import TurnRecord
from rag_orchestrator.loop.request import TurnRequest
from rag_orchestrator.loop.state import TurnState
from rag_orchestrator.loop.steps import Continuation, FinalAnswer, HoldForApproval, Stop
from rag_orchestrator.observability import logger, metrics
from rag_orchestrator.providers.events import StreamingMode

Ending = FinalAnswer | Stop | HoldForApproval


async def complete(deps: TurnDeps, state: TurnState, ending: Ending) -> AsyncIterator[ev.StreamEvent]:
    """End the turn: with its answer, with the part of it a Stop cut short (marked interrupted), or
    with no answer while a held call awaits its decision."""
    match ending:
        case FinalAnswer(content=content, reasoning=reasoning, reason=reason):
            cut = False
        case Stop(content=content, reason=reason):
            reasoning, cut = None, True
        case HoldForApproval():
            content, reasoning, reason, cut = "", None, "awaiting_approval", False
        case _:
            assert_never(ending)
    record, emit, answers = state.record, state.events, not isinstance(ending, HoldForApproval)
    sources = record.sources_of(content)
    tail = "" if cut or not answers else deps.finalizer.epilogue(content, sources)
    head = deps.finalizer.prologue if answers and (content or not cut) else ""
    unsent = ("" if state.headed else head) + tail
    if unsent and state.request.mode is StreamingMode.PROGRESSIVE:
        yield emit.chunk(unsent)
    if answers and (content or not cut):
        stored = record.add(Message(role=Role.ASSISTANT, content=head + content + tail, reasoning=reasoning))
        record.content, record.message_id = stored.content, stored.message_id
    record.sources, record.finish_reason = sources, reason
    await persist(deps, state, interrupted=cut)
    if record.failure is not None:  # not stored: the turn ends with an Error, not a Completed naming nothing
        raise record.failure
    if sources:
        yield emit.sources(sources)
    metrics.add_metric(name="TurnsCompleted", unit="Count", value=1)
    metrics.add_metric(name="TurnTokens", unit="Count", value=record.tokens)
    yield emit.completed(record)


async def persist(deps: TurnDeps, state: TurnState, *, interrupted: bool) -> None:
    """Store what the turn produced and release the lock, once, even while being cancelled."""
    if state.finished:
        return
    state.finished = True
    record, opening, request = state.record, state.opening, state.request
    answer, revision = record.message_id, opening.revision
    stored = revision.stored(record.to_store(interrupted), answer)
    record.superseded = revision.superseded(answer)
    with anyio.CancelScope(shield=True):
        try:
            model = deps.strategy.metadata.model
            audit = record.audit(request, opening.question, stored, model=model, interrupted=interrupted)
            outcome = TurnOutcome(
                stored,
                tool_calls=sum(len(m.tool_calls or ()) for m in stored),
                tokens=record.tokens + revision.question_tokens(answer),
                interrupted=interrupted,
                audit=revision.audited(audit, answer),
                context=state.context,
                supersede=record.superseded,
                held=record.held,
                # A question's claim wrote the expired call's outcome; a continuation's finish writes it.
                decided=record.decided if isinstance(opening, Continuation) else None,
                spend=state.spend,
                usage=spent(record, request, model),
            )
            await deps.store.finish_turn(request.conversation_id, outcome)
            log_usage(outcome.usage, deps.config.prices)
        except Exception as exc:
            logger.exception("could not record the turn; releasing the lock")
            # Its conversation deleted or its caller erased meanwhile, or the store down: nothing of the
            # turn was kept, so no after-turn work (memory, title) may keep anything of it either.
            record.failure = (
                exc if isinstance(exc, RagError) else StorageUnavailable("The turn could not be stored")
            )
            await deps.store.abort_turn(request.conversation_id)
            if state.spend is not None and state.spend.reserve:
                await deps.store.release(state.spend)


def spent(record: TurnRecord, request: TurnRequest, model: str) -> UsageLine:
    """The turn's line of the usage report: its caller's, on today's UTC date, for its model."""
    return UsageLine(
        day=utcnow().date().isoformat(),
        caller_id=request.caller.caller_id,
        model=model,
        turns=1,
        tool_calls=record.tool_calls,
        input_tokens=record.input_tokens,
        output_tokens=record.output_tokens,
    )


def log_usage(line: UsageLine | None, prices: Prices) -> None:
    """The turn's line of the usage report, logged for the dashboard's "Usage by caller" (template.yaml)."""
    if line is not None:
        extra = {
            "caller_id": line.caller_id,
            "model": line.model,
            "input_tokens": line.input_tokens,
            "output_tokens": line.output_tokens,
            "tool_calls": line.tool_calls,
            "estimated_cost": cost(line, prices) or 0.0,
        }
        logger.info("turn usage", extra=extra)


async def after(deps: TurnDeps, state: TurnState) -> None:
    """The after-turn hooks (loop/after_turn.py), once the turn has ended; nothing before. Then the
    turn's spans are exported, before a Lambda environment may be frozen."""
    if state.finished:
        await run_after_turn(deps.after_turn, state.request, state.record)
    if deps.tracer.enabled:
        await asyncio.to_thread(deps.tracer.flush)
