"""Parse a text/event-stream body the way a browser's EventSource does."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any


@dataclass
class SSEMessage:
    event: str
    id: str | None
    data: Any


def parse_sse(body: str) -> list[SSEMessage]:
    lines = [*body.replace("\r\n", "\n").split("\n"), ""]  # a last blank line ends the last message
    return [item for item in iter_sse(lines) if isinstance(item, SSEMessage)]


@dataclass
class SSEComment:
    text: str


def iter_sse(lines: Iterable[str]) -> Iterator[SSEMessage | SSEComment]:
    """Messages (and comment lines) as they arrive, from a stream's lines (httpx `iter_lines()`)."""
    event, event_id, data = "message", None, []
    for line in lines:
        if line.startswith(":"):
            yield SSEComment(line[1:].strip())
        elif not line:
            if data:
                yield SSEMessage(event, event_id, json.loads("\n".join(data)))
            event, event_id, data = "message", None, []
        else:
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "event":
                event = value
            elif field == "id":
                event_id = value
            elif field == "data":
                data.append(value)
