"""Our stream events as AI SDK UI message stream parts (protocol v1): a pure translation, no I/O.

One `UIParts` per turn. `start()` opens the message and its first step; `parts(event)` gives the
parts of each event; a model call after tool results starts a new step. Reasoning never reaches
here (the loop drops it), so no reasoning part is ever sent. Part shapes follow the `ai` package's
`uiMessageChunkSchema`.
"""

from __future__ import annotations

import json
from typing import Any, assert_never

from rag_orchestrator.domain import events as ev
from rag_orchestrator.domain.passages import SourceWithSnippet

Part = dict[str, Any]
DONE = b"data: [DONE]\n\n"
HEADERS = {
    "Cache-Control": "no-cache",
    "Connection": "keep-alive",
    "X-Accel-Buffering": "no",
    "x-vercel-ai-ui-message-stream": "v1",
}
# Where a source part keeps the passage's own fields: the SDK's providerMetadata is keyed by provider.
METADATA_KEY = "ragOrchestrator"


def encode_part(part: Part) -> bytes:
    """One part as the SDK reads it: an unnamed SSE message holding the JSON."""
    return f"data: {json.dumps(part, separators=(',', ':'), default=str)}\n\n".encode()


def source_part(source: SourceWithSnippet) -> Part:
    """A retrieved passage as a `source-document`; its id is the key the answer cites."""
    return {
        "type": "source-document",
        "sourceId": f"{source.document_id}#{source.chunk_index}",
        "mediaType": "text/plain",
        "title": source.title or source.document_id,
        "filename": source.document_id,
        "providerMetadata": {METADATA_KEY: source.model_dump(mode="json")},
    }


class UIParts:
    """The state one turn's translation needs: the open step, the open text part, its id."""

    def __init__(self, conversation_id: str, turn_id: str) -> None:
        self.conversation_id = conversation_id
        self.turn_id = turn_id  # for a cancel (POST …/turns/{turnId}/cancel) or a resume
        self._step_open = False
        self._tools_ran = False  # tool results ended the step's model call: new output is a new step
        self._text_id: str | None = None
        self._texts = 0

    def start(self) -> list[Part]:
        metadata = {"conversationId": self.conversation_id, "turnId": self.turn_id}
        return [{"type": "start", "messageMetadata": metadata}, *self._step()]

    def parts(self, event: ev.StreamEvent) -> list[Part]:
        match event:
            case ev.StatusUpdate(status=status, details=details):
                data = {"status": status} if details is None else {"status": status, "details": details}
                return [{"type": "data-status", "data": data, "transient": True}]
            case ev.ResponseChunk(content=content):
                if not content:
                    return []
                out = self._next_step()
                if self._text_id is None:
                    self._texts += 1
                    self._text_id = f"text-{self._texts}"
                    out.append({"type": "text-start", "id": self._text_id})
                return [*out, {"type": "text-delta", "id": self._text_id, "delta": content}]
            case ev.ToolCallStart(tool_name=name, tool_call_id=call_id, arguments=arguments):
                return [
                    *self._next_step(),
                    *self._end_text(),
                    {
                        "type": "tool-input-available",
                        "toolCallId": call_id,
                        "toolName": name,
                        "input": arguments,
                        # The backend runs its own tools: never the client's onToolCall, never a static type.
                        "providerExecuted": True,
                        "dynamic": True,
                    },
                ]
            case ev.ToolCallResult(tool_call_id=call_id, result=result, success=success):
                self._tools_ran = True
                if success:
                    return [{"type": "tool-output-available", "toolCallId": call_id, "output": result}]
                return [{"type": "tool-output-error", "toolCallId": call_id, "errorText": result}]
            case ev.Preview(preview_type=preview_type, payload=payload):
                return [{"type": "data-preview", "data": {"previewType": preview_type, "payload": payload}}]
            case ev.Sources(sources=sources):
                return [*self._end_text(), *(source_part(s) for s in sources)]
            case ev.ApprovalRequested():
                fields = event.model_dump(
                    mode="json",
                    by_alias=True,
                    include={"approval_id", "tool_name", "tool_call_id", "arguments", "expires_at"},
                )
                return [*self._end_text(), {"type": "data-approval", "data": fields}]
            case ev.Completed(iterations_used=iterations, tokens_used=tokens, message_id=message_id):
                metadata = {
                    "conversationId": self.conversation_id,
                    "messageId": message_id,
                    "iterationsUsed": iterations,
                    "tokensUsed": tokens,
                    # The SDK's own finishReason has no word for a cancel or a deadline: the native one does.
                    "finishReason": event.finish_reason,
                }
                return [
                    *self._finish_step(),
                    {"type": "finish", "finishReason": "stop", "messageMetadata": metadata},
                ]
            case ev.Error(error=error):
                return [
                    *self._finish_step(),
                    {"type": "error", "errorText": error},
                    {"type": "finish", "finishReason": "error"},
                ]
            case _:
                assert_never(event)

    def _step(self) -> list[Part]:
        self._step_open, self._tools_ran = True, False
        return [{"type": "start-step"}]

    def _next_step(self) -> list[Part]:
        return [*self._finish_step(), *self._step()] if self._tools_ran else []

    def _end_text(self) -> list[Part]:
        if self._text_id is None:
            return []
        text_id, self._text_id = self._text_id, None
        return [{"type": "text-end", "id": text_id}]

    def _finish_step(self) -> list[Part]:
        if not self._step_open:
            return []
        self._step_open = False
        return [*self._end_text(), {"type": "finish-step"}]
