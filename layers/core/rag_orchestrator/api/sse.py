"""Server-sent events encoding: `event:` the type, `id:` a sequence number, `data:` the JSON."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

SSE_HEADERS = {
    "Cache-Control": "no-cache",
    "Connection": "keep-alive",
    "X-Accel-Buffering": "no",
}


def encode(event_type: str, data: BaseModel | dict[str, Any], seq: int) -> bytes:
    if isinstance(data, BaseModel):
        # What model_dump_json() returns, as bytes and without its wrapper: this runs once per token.
        payload = data.__pydantic_serializer__.to_json(data)
    else:
        payload = json.dumps(data, default=str).encode()
    return b"event: %s\nid: %d\ndata: %s\n\n" % (event_type.encode(), seq, payload)


def comment(text: str = "keep-alive") -> bytes:
    return f": {text}\n\n".encode()
