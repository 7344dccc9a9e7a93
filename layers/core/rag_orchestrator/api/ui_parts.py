"""Our stream events as AI SDK UI message stream parts (protocol v1, read alike by `ai` 6 and 7): a pure
translation, no I/O (docs/ui-stream.md).

One `UIParts` per turn. `start()` opens the message; `parts(event)` gives the parts of each event; a
model call after tool results starts a new step. Reasoning never reaches here (the loop drops it), so
no reasoning part is ever sent. Part shapes follow the `ai` package's `uiMessageChunkSchema`, using
only parts both majors know.

A held tool call becomes the SDK's own approval: the call's `tool-input-available`, then
`tool-approval-request`. The turn that continues after the decision (`continues`: the held call's id)
opens no step of its own before the call's outcome, so that outcome lands on the part the client
already holds; a call whose result comes with no start in the turn is the decision's refusal
(denied, or expired): `tool-output-denied`.
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
# The SDK's finish reasons both majors accept; the native one is in the message metadata.
SDK_FINISH: dict[ev.FinishReason, str] = {
    "stop": "stop",
    "awaiting_approval": "tool-calls",
    "max_iterations": "other",
    "cancelled": "other",
    "deadline": "other",
}


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


def tool_input(call_id: str, name: str, arguments: dict[str, Any] | None) -> Part:
    part: Part = {
        "type": "tool-input-available",
        "toolCallId": call_id,
        "toolName": name,
        # The backend runs its own tools: never the client's onToolCall, never a static type.
        "providerExecuted": True,
        "dynamic": True,
    }
    if arguments is not None:
        part["input"] = arguments
    return part


class UIParts:
    """The state one turn's translation needs: the open step and text part, the calls it started."""

    def __init__(
        self,
        conversation_id: str,
        turn_id: str,
        *,
        message_id: str | None = None,
        continues: str | None = None,
    ) -> None:
        """`message_id`: the UI message's id (None: the client keeps its own, as a continuation must);
        `continues`: the tool call id of the held call whose decision this turn acts on."""
        self.conversation_id = conversation_id
        self.turn_id = turn_id  # for a cancel (POST …/turns/{turnId}/cancel)
        self._message_id = message_id
        self._continues = continues
        self._step_open = False
        self._tools_ran = continues is not None  # new output after a tool result is a new step
        self._text_id: str | None = None
        self._texts = 0
        self._started: set[str] = set()

    def start(self) -> list[Part]:
        part: Part = {
            "type": "start",
            "messageMetadata": {"conversationId": self.conversation_id, "turnId": self.turn_id},
        }
        if self._message_id is not None:
            part["messageId"] = self._message_id
        return [part] if self._continues is not None else [part, *self._step()]

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
                self._started.add(call_id)
                if call_id == self._continues:  # the client holds this call's part, input included
                    return []
                return [*self._next_step(), *self._end_text(), tool_input(call_id, name, arguments)]
            case ev.ToolCallResult(tool_name=name, tool_call_id=call_id, result=result, success=success):
                return self._outcome(name, call_id, result, success)
            case ev.Preview(preview_type=preview_type, payload=payload):
                return [{"type": "data-preview", "data": {"previewType": preview_type, "payload": payload}}]
            case ev.Sources(sources=sources):
                return [*self._end_text(), *(source_part(s) for s in sources)]
            case ev.ApprovalRequested(approval_id=approval_id, tool_name=name, tool_call_id=call_id):
                return [
                    *self._next_step(),
                    *self._end_text(),
                    tool_input(call_id, name, event.arguments),
                    {"type": "tool-approval-request", "approvalId": approval_id, "toolCallId": call_id},
                ]
            case ev.Completed(iterations_used=iterations, tokens_used=tokens, message_id=message_id):
                metadata = {
                    "conversationId": self.conversation_id,
                    "turnId": self.turn_id,
                    "messageId": message_id,
                    "iterationsUsed": iterations,
                    "tokensUsed": tokens,
                    "usage": {"totalTokens": tokens},
                    # The SDK's finishReason has no word for a cancel, a deadline or an approval wait.
                    "finishReason": event.finish_reason,
                }
                finish = SDK_FINISH[event.finish_reason]
                return [
                    *self._finish_step(),
                    {"type": "finish", "finishReason": finish, "messageMetadata": metadata},
                ]
            case ev.Error(error=error):
                return [
                    *self._finish_step(),
                    {"type": "error", "errorText": error},
                    {"type": "finish", "finishReason": "error"},
                ]
            case _:
                assert_never(event)

    def _outcome(self, name: str, call_id: str, result: str, success: bool) -> list[Part]:
        made: list[Part] = []
        if call_id not in self._started and call_id != self._continues:  # a replayed refusal
            made = [*self._next_step(), *self._end_text(), tool_input(call_id, name, None)]
        self._tools_ran = True
        if call_id not in self._started:  # a held call's refusal: no start of it in this turn
            return [*made, {"type": "tool-output-denied", "toolCallId": call_id}]
        if success:
            return [{"type": "tool-output-available", "toolCallId": call_id, "output": result}]
        return [{"type": "tool-output-error", "toolCallId": call_id, "errorText": result}]

    def _step(self) -> list[Part]:
        self._step_open, self._tools_ran = True, False
        return [{"type": "start-step"}]

    def _next_step(self) -> list[Part]:
        return [*self._finish_step(), *self._step()] if self._tools_ran or not self._step_open else []

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
