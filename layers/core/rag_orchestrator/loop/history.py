"""The model's context for a turn: rolling window hygiene, and the untrusted text it reads enclosed
by the turn's fence (domain/fences.py) — the app's data message and tool results (prompts: prompts.py)."""

from __future__ import annotations

from typing import Any

from rag_orchestrator.domain.fences import APP_DATA, Fence
from rag_orchestrator.domain.messages import Message, Role
from rag_orchestrator.loop.prompts import context_data


def well_formed(window: list[Message]) -> list[Message]:
    """Drop what a provider would refuse: tool results whose call fell out of the window, and
    tool calls whose results are missing (an interrupted turn)."""
    answered = {m.tool_call_id for m in window if m.role is Role.TOOL}
    called: set[str] = set()
    kept: list[Message] = []
    for message in window:
        if message.role is Role.TOOL:
            if message.tool_call_id in called:
                kept.append(message)
            continue
        if message.role is Role.ASSISTANT and message.tool_calls:
            ids = {call.id for call in message.tool_calls}
            if not ids <= answered:
                if message.content:
                    kept.append(message.model_copy(update={"tool_calls": None}))
                continue
            called |= ids
        kept.append(message)
    return kept


def app_data(
    fence: Fence, context_type: str | None, context: dict[str, Any] | None, knowledge: str | None
) -> Message | None:
    """The user-role message of data the app sent with the question: its context (JSON) and the
    initial search's passages, each enclosed; None when there is neither."""
    found = context_data(context_type, context)
    blocks = [fence.enclose(found, "app-context")] if found else []
    if knowledge:
        blocks.append(fence.enclose(knowledge, "knowledge"))
    return Message(role=Role.USER, content="\n".join([APP_DATA, *blocks])) if blocks else None


def with_app_data(messages: list[Message], data: Message | None) -> list[Message]:
    """`messages` with the data message just before the question it came with (the last user message)."""
    if data is None:
        return messages
    question = max((i for i, m in enumerate(messages) if m.role is Role.USER), default=len(messages))
    return [*messages[:question], data, *messages[question:]]


def fenced(messages: list[Message], fence: Fence) -> list[Message]:
    """What the model is sent: tool results enclosed as data (they are stored as the tools gave them)."""
    return [
        m.model_copy(update={"content": fence.enclose(m.content, "tool-result")})
        if m.role is Role.TOOL
        else m
        for m in messages
    ]
