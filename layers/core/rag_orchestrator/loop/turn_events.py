"""The stream events of one turn (docs/streams.md), each built with the turn's ids as its own type."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rag_orchestrator.domain import events as ev
from rag_orchestrator.domain.messages import ToolCall, ToolPreview
from rag_orchestrator.domain.passages import Passage, SourceWithSnippet
from rag_orchestrator.loop.record import TurnRecord


@dataclass(slots=True)
class TurnEvents:
    conversation_id: str
    turn_id: str

    def status(self, status: str, details: str | None = None) -> ev.StatusUpdate:
        return ev.StatusUpdate(
            conversation_id=self.conversation_id, turn_id=self.turn_id, status=status, details=details
        )

    def chunk(self, content: str) -> ev.ResponseChunk:
        return ev.ResponseChunk(conversation_id=self.conversation_id, turn_id=self.turn_id, content=content)

    def tool_start(self, call: ToolCall, arguments: dict[str, Any]) -> ev.ToolCallStart:
        return ev.ToolCallStart(
            conversation_id=self.conversation_id,
            turn_id=self.turn_id,
            tool_name=call.function.name,
            tool_call_id=call.id,
            arguments=arguments,
        )

    def tool_result(self, tool_name: str, tool_call_id: str, result: str, success: bool) -> ev.ToolCallResult:
        return ev.ToolCallResult(
            conversation_id=self.conversation_id,
            turn_id=self.turn_id,
            tool_name=tool_name,
            tool_call_id=tool_call_id,
            result=result,
            success=success,
        )

    def preview(self, preview: ToolPreview) -> ev.Preview:
        return ev.Preview(
            conversation_id=self.conversation_id,
            turn_id=self.turn_id,
            preview_type=preview.type,
            payload=preview.payload,
        )

    def sources(self, passages: Sequence[Passage]) -> ev.Sources:
        return ev.Sources(
            conversation_id=self.conversation_id,
            turn_id=self.turn_id,
            sources=[SourceWithSnippet.of(p) for p in passages],
        )

    def completed(self, record: TurnRecord) -> ev.Completed:
        return ev.Completed(
            conversation_id=self.conversation_id,
            turn_id=self.turn_id,
            iterations_used=record.iterations,
            tokens_used=record.tokens,
            message_id=record.message_id,
            finish_reason=record.finish_reason,
        )

    def error(self, error: str, details: str | None = None) -> ev.Error:
        return ev.Error(
            conversation_id=self.conversation_id, turn_id=self.turn_id, error=error, details=details
        )
