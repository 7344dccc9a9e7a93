"""Component schemas the routes' own models do not give FastAPI: the error JSON, every event of the
native chat stream and of the answer stream, the AI SDK stream's parts, and one schema per stream for
its SSE messages (docs/api.md).

An SSE message is described as OpenAPI 3.2 (and schemathesis) read `text/event-stream`: an object with
the message's `event`, `id` and `data` fields as strings, `data` holding JSON whose schema is its
`contentSchema`. Built only when /openapi.json is first asked for, never at start-up.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, get_args

from pydantic import ConfigDict

from rag_orchestrator.api.sse import AGENT_STREAM, ANSWER_STREAM, CHAT_STREAM, UI_STREAM
from rag_orchestrator.domain.base import CamelModel
from rag_orchestrator.domain.passages import Source

REF = "#/components/schemas/{model}"
ERROR = "ErrorResponse"
CHAT_STREAM_EVENT = "ChatStreamEvent"


# What "Try it out" on /docs starts from (the same bodies as the docs' examples), by request schema.
REQUEST_EXAMPLES: dict[str, dict[str, Any]] = {
    "CreateConversationRequest": {"metadata": {"channel": "web"}},
    "ChatBody": {"message": "How do I run the tests?", "clientMessageId": "m-1"},
    "AgentChatRequest": {
        "message": "Add a reminder email after approval",
        "context_type": "workflow",
        "context": {"workflowId": "wf-onboarding"},
        "history": [{"role": "user", "content": "Show me the onboarding workflow"}],
    },
    "UIChatRequest": {
        "id": "chat-1",
        "messages": [
            {"id": "m-1", "role": "user", "parts": [{"type": "text", "text": "How do I run the tests?"}]}
        ],
        "trigger": "submit-message",
    },
    "CreateAttachmentRequest": {"fileName": "receipt.png", "contentType": "image/png", "sizeBytes": 48213},
    "QueryRequest": {"query": "How do I run the tests?", "topK": 3},
    "AnswerRequest": {"query": "How do I run the tests?", "topK": 3},
    "IngestRequest": {
        "documents": [{"documentId": "faq", "title": "FAQ", "text": "Refunds are paid within 14 days."}]
    },
}


def ref(name: str) -> dict[str, str]:
    return {"$ref": REF.format(model=name)}


class ErrorResponse(CamelModel):
    """Every error answer (docs/errors.md); `requestId` is also the `x-request-id` header."""

    model_config = ConfigDict(extra="forbid")

    error: str
    message: str
    timestamp: datetime
    request_id: str


class AnswerSources(CamelModel):
    """`sources`, the answer stream's first event: the passages put in the prompt."""

    model_config = ConfigDict(extra="forbid")

    sources: list[Source]


class AnswerDelta(CamelModel):
    """`delta`: text as the model writes it, citations already checked."""

    model_config = ConfigDict(extra="forbid")

    delta: str


class AnswerError(ErrorResponse):
    """`error`, instead of `done`: the error JSON and the HTTP status the same failure has on REST."""

    status: int


def stream_components() -> dict[str, Any]:
    """The component schemas this module adds, by name."""
    from pydantic.json_schema import models_json_schema

    from rag_orchestrator.domain.events import stream_event_adapter

    events = stream_event_adapter.json_schema(mode="serialization", ref_template=REF)
    schemas: dict[str, Any] = events.pop("$defs")
    for name in events["discriminator"]["mapping"]:
        # Pydantic leaves a field with a default out of `required` when serializing; `type` is always sent.
        required = [field for field in schemas[name].get("required", []) if field != "type"]
        schemas[name]["required"] = ["type", *required]
    schemas[CHAT_STREAM_EVENT] = {
        **events,
        "title": CHAT_STREAM_EVENT,
        "description": "An event of a native chat stream: its `type` names it (docs/streams.md).",
    }
    from rag_orchestrator.retrieval.answers import AnswerResponse

    documented = (ErrorResponse, AnswerSources, AnswerDelta, AnswerError, AnswerResponse)
    models = [(m, "serialization") for m in documented]
    _, answers = models_json_schema(models, ref_template=REF)  # type: ignore[arg-type]
    schemas.update(answers["$defs"])
    schemas[CHAT_STREAM] = _chat_stream(list(events["discriminator"]["mapping"]))
    schemas[ANSWER_STREAM] = _answer_stream()
    schemas[UI_STREAM] = _ui_stream()
    schemas[AGENT_STREAM] = _agent_stream()
    return schemas


def _message(
    description: str, data: dict[str, Any], event: dict[str, Any] | None = None, event_id: str = ""
) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "id": {"type": "string", "description": event_id or "The event's number in the stream, from 1"},
        "data": {"type": "string", "contentMediaType": "application/json", "contentSchema": data},
    }
    if event is not None:
        properties["event"] = event
    return {"type": "object", "description": description, "required": ["data"], "properties": properties}


def _chat_stream(types: list[str]) -> dict[str, Any]:
    schema = _message(
        "One SSE message per event: `event:` the event's type, `id:` `<turnId>:<seq>`, `data:` the "
        "event as JSON, which repeats the type in `type`. Exactly one `Completed` or `Error` ends it; "
        "comment lines (`: keep-alive`) keep a quiet stream open (docs/streams.md).",
        ref(CHAT_STREAM_EVENT),
        {"type": "string", "enum": types},
        "`<turnId>:<seq>`: the turn's id and the event's number in the turn, from 1; send the last one back "
        "as Last-Event-ID to resume",
    )
    schema["required"] = ["event", "data"]
    return schema


_ANSWER_EVENTS = {
    "sources": ("AnswerSources", "the passages in the prompt; always first"),
    "delta": ("AnswerDelta", "text as the model writes it"),
    "done": ("AnswerResponse", "the whole answer, exactly what POST /api/v1/query/answer returns; last"),
    "error": ("AnswerError", "instead of `done` when the answer failed; last"),
}


def _answer_stream() -> dict[str, Any]:
    messages = []
    for event, (name, what) in _ANSWER_EVENTS.items():
        message = _message(f"`{event}`: {what}", ref(name), {"const": event})
        message["required"] = ["event", "data"]
        messages.append(message)
    return {
        "title": ANSWER_STREAM,
        "description": "One SSE message per event: `event:` its name, `id:` its number from 1, `data:` "
        "its JSON (which has no `type`: the name is in `event:`). `sources`, `delta`…, then `done` or `error`.",
        "oneOf": messages,
    }


def _part(kind: str, **fields: dict[str, Any]) -> dict[str, Any]:
    required = ["type", *(name for name in fields if not name.startswith("?"))]
    properties = {name.lstrip("?"): schema for name, schema in fields.items()}
    return {
        "type": "object",
        "required": required,
        "properties": {"type": {"const": kind}, **properties},
    }


_TEXT = {"type": "string"}
_OBJECT = {"type": "object"}
_ANY: dict[str, Any] = {}


def _metadata(**fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "required": list(fields), "properties": fields}


def _ui_stream() -> dict[str, Any]:
    """The parts api/ui_parts.py sends, then the literal `[DONE]` (docs/ui-stream.md)."""
    from rag_orchestrator.domain.events import FinishReason

    finished = _metadata(
        conversationId=_TEXT,
        messageId={"type": ["string", "null"]},
        iterationsUsed={"type": "integer"},
        tokensUsed={"type": "integer"},
        finishReason={"enum": list(get_args(FinishReason))},
    )
    parts = [
        _part("start", messageMetadata=_metadata(conversationId=_TEXT, turnId=_TEXT)),
        _part("start-step"),
        _part("finish-step"),
        _part("text-start", id=_TEXT),
        _part("text-delta", id=_TEXT, delta=_TEXT),
        _part("text-end", id=_TEXT),
        _part(
            "tool-input-available",
            toolCallId=_TEXT,
            toolName=_TEXT,
            input=_OBJECT,
            providerExecuted={"const": True},
            dynamic={"const": True},
        ),
        _part("tool-output-available", toolCallId=_TEXT, output=_ANY),
        _part("tool-output-error", toolCallId=_TEXT, errorText=_TEXT),
        _part(
            "source-document",
            sourceId=_TEXT,
            mediaType=_TEXT,
            title=_TEXT,
            filename=_TEXT,
            providerMetadata=_OBJECT,
        ),
        _part("data-preview", data=_OBJECT),
        _part("data-status", data=_OBJECT, transient={"const": True}),
        _part("finish", finishReason={"enum": ["stop", "error"]}, **{"?messageMetadata": finished}),
        _part("error", errorText=_TEXT),
    ]
    json_part = {"type": "string", "contentMediaType": "application/json", "contentSchema": {"oneOf": parts}}
    return {
        "title": UI_STREAM,
        "description": "One unnamed SSE message per part: `data:` the part as JSON; the last is `data: [DONE]`.",
        "type": "object",
        "required": ["data"],
        "properties": {"data": {"if": {"const": "[DONE]"}, "else": json_part}},
    }


def _agent_event(**fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "required": list(fields), "properties": fields}


_AGENT_EVENTS: dict[str, tuple[str, dict[str, Any]]] = {
    "content_chunk": ("answer text as the model writes it", _agent_event(chunk=_TEXT)),
    "tool_call_start": (
        "a tool call, before it runs",
        _agent_event(tool_use_id=_TEXT, name=_TEXT, input=_OBJECT),
    ),
    "tool_call_result": (
        "a tool call's outcome",
        _agent_event(tool_use_id=_TEXT, name=_TEXT, is_error={"type": "boolean"}),
    ),
    "workflow_preview": ("a workflow preview tool's payload, for the user to accept or reject", _OBJECT),
    "table_config_preview": ("a table configuration preview tool's payload", _OBJECT),
    "message_complete": (
        "the turn ended; last",
        _agent_event(
            finish_reason=_TEXT,
            iterations_used={"type": "integer"},
            tokens_used={"type": "integer"},
            sources={"type": "array", "items": ref("SourceWithSnippet")},
            audit_id=_TEXT,
        ),
    ),
    "error": ("instead of message_complete when the turn failed; last", _agent_event(message=_TEXT)),
}


def _agent_stream() -> dict[str, Any]:
    """The named events of api/agent_chat.py (docs/streams.md)."""
    messages = []
    for event, (what, data) in _AGENT_EVENTS.items():
        message = _message(f"`{event}`: {what}", data, {"const": event})
        message["required"] = ["event", "data"]
        message["properties"].pop("id")
        messages.append(message)
    return {
        "title": AGENT_STREAM,
        "description": "One SSE message per event: `event:` its name, `data:` its JSON (snake case). "
        "`message_complete` or `error` ends it; comment lines keep a quiet stream open.",
        "oneOf": messages,
    }
