"""One short model call beside a turn (a title, a summary, a follow-up made a standalone query): no tools,
a small token cap, a time limit, and None instead of an error, so its caller can go on without it."""

from __future__ import annotations

import asyncio
import time
from contextlib import aclosing
from dataclasses import dataclass

from rag_orchestrator.domain.messages import Message
from rag_orchestrator.observability import logger
from rag_orchestrator.providers import events as se
from rag_orchestrator.providers.strategies import ModelStrategy


@dataclass(frozen=True, slots=True)
class ShortCall:
    """A short call as it was made, for the count and the spans of the turn it was made for."""

    usage: se.Usage
    timing: tuple[int, int]  # time.time_ns() at its start and its end
    finish_reason: str | None = None
    error_type: str | None = None  # it failed, or ran out of time


async def short_reply(
    strategy: ModelStrategy,
    conversation_id: str,
    messages: list[Message],
    max_tokens: int,
    seconds: float,
    calls: list[ShortCall] | None = None,
) -> str | None:
    """The model's final text, or None on any failure or when it runs out of `seconds` (logged with the
    `conversation_id` given, which names the purpose when there is no conversation: "follow-up").
    The call is appended to `calls` when given, whatever its outcome."""
    ctx = se.IterationContext(
        conversation_id=conversation_id,
        iteration=1,
        max_iterations=1,
        streaming_mode=se.StreamingMode.FINAL_ONLY,
        allow_tools=False,
        max_tokens=max_tokens,
    )
    text, usage, reason, started = "", se.Usage(), None, time.time_ns()
    try:
        async with asyncio.timeout(seconds):
            async with aclosing(strategy.run_iteration(messages, [], ctx)) as events:
                async for event in events:
                    if isinstance(event, se.FinalResponse):
                        text = event.content
                    elif isinstance(event, se.IterationComplete):
                        usage, reason = event.usage, event.finish_reason
    except Exception as exc:
        logger.warning(
            "short model call failed",
            extra={"error_type": type(exc).__name__, "conversation_id": conversation_id},
        )
        if calls is not None:
            calls.append(ShortCall(usage, (started, time.time_ns()), error_type=type(exc).__name__))
        return None
    if calls is not None:
        calls.append(ShortCall(usage, (started, time.time_ns()), reason))
    return text
