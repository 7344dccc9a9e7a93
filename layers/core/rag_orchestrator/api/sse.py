"""Server-sent events encoding: `event:` the type, `id:` the event's id, `data:` the JSON; `:` comments."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

# The component schemas of the OpenAPI document (api/openapi_schemas.py) describing each stream's messages.
CHAT_STREAM = "ChatStreamMessage"  # the native stream: …/messages/stream and every other turn stream
ANSWER_STREAM = "AnswerStreamMessage"  # /api/v1/query/answer/stream
UI_STREAM = "UIMessageStreamMessage"  # …/ui-stream, the AI SDK UI message stream protocol (v1)
AGENT_STREAM = "AgentChatStreamMessage"  # /api/v1/agent/chat, the stateless agent chat

SSE_HEADERS = {
    "Cache-Control": "no-cache",
    "Connection": "keep-alive",
    "X-Accel-Buffering": "no",
}


def encode(event_type: str, data: BaseModel | dict[str, Any], event_id: int | str) -> bytes:
    if isinstance(data, BaseModel):
        # What model_dump_json() returns, as bytes and without its wrapper.
        payload = data.__pydantic_serializer__.to_json(data)
    else:
        payload = json.dumps(data, default=str).encode()
    return b"event: %s\nid: %s\ndata: %s\n\n" % (event_type.encode(), str(event_id).encode(), payload)


def frame(event_type: str, payload: str, event_id: int | str) -> bytes:
    """One message whose data is JSON already."""
    return f"event: {event_type}\nid: {event_id}\ndata: {payload}\n\n".encode()


def event_stream(schema: str) -> dict[str, Any]:
    """The `content` of a route's 200 of server-sent events, each message described by `schema`."""
    return {"text/event-stream": {"schema": {"$ref": f"#/components/schemas/{schema}"}}}


def comment(text: str = "keep-alive") -> bytes:
    return f": {text}\n\n".encode()
