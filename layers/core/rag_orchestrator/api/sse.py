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
    payload = data.model_dump_json() if isinstance(data, BaseModel) else json.dumps(data, default=str)
    return f"event: {event_type}\nid: {seq}\ndata: {payload}\n\n".encode()


def comment(text: str = "keep-alive") -> bytes:
    return f": {text}\n\n".encode()
