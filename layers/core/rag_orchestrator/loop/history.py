"""The model's context for a turn: rolling window hygiene and knowledge results (prompts: prompts.py)."""

from __future__ import annotations

from rag_orchestrator.domain.messages import Message, Role


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


def knowledge_message(results_json: str) -> Message:
    return Message(
        role=Role.SYSTEM,
        content="Knowledge base results for the user's latest message "
        "(cite as [source:documentId#chunkIndex]):\n" + results_json,
    )
