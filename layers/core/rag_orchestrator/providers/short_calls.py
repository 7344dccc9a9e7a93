"""One short model call beside a turn (a title, a summary, a follow-up made a standalone query): no tools,
a small token cap, a time limit, and None instead of an error, so its caller can go on without it."""

from __future__ import annotations

import asyncio
from contextlib import aclosing

from rag_orchestrator.domain.messages import Message
from rag_orchestrator.observability import logger
from rag_orchestrator.providers import events as se
from rag_orchestrator.providers.strategies import ModelStrategy


async def short_reply(
    strategy: ModelStrategy, conversation_id: str, messages: list[Message], max_tokens: int, seconds: float
) -> str | None:
    """The model's final text, or None on any failure or when it runs out of `seconds` (logged with the
    `conversation_id` given, which names the purpose when there is no conversation: "follow-up")."""
    ctx = se.IterationContext(
        conversation_id=conversation_id,
        iteration=1,
        max_iterations=1,
        streaming_mode=se.StreamingMode.FINAL_ONLY,
        allow_tools=False,
        max_tokens=max_tokens,
    )
    text = ""
    try:
        async with asyncio.timeout(seconds):
            async with aclosing(strategy.run_iteration(messages, [], ctx)) as events:
                async for event in events:
                    if isinstance(event, se.FinalResponse):
                        text = event.content
    except Exception as exc:
        logger.warning(
            "short model call failed",
            extra={"error_type": type(exc).__name__, "conversation_id": conversation_id},
        )
        return None
    return text
