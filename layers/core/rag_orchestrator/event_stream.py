"""Server-sent events read from bytes as they arrive: the model's answer stream (providers), an MCP
server's answers (tools/mcp_session.py).

The WHATWG event-stream rules as httpx-sse applies them (lines end at CR LF, CR or LF; `:` starts a
comment; `data` lines join with LF; an event is dispatched at a blank line), on bytes: a streamed
token costs a few byte checks and one decode here instead of httpx's text decoder, a line decoder
and a field decoder (bench/README.md, streaming). `id` and `retry` are not kept: a model answer is
never resumed, so nothing reads them.
"""

from __future__ import annotations

_COLON, _CR, _LF = ord(":"), ord("\r"), ord("\n")

ServerSentEvent = tuple[str, str]  # (event type, "" when the event named none; data)


class EventStreamDecoder:
    """Feed it the body's chunks in order, then `flush()` at the end; each returns complete events."""

    def __init__(self) -> None:
        self._tail = b""  # the unfinished last line, with a CR held back when a chunk ended on one
        self._event = ""
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        if self._tail:
            chunk = self._tail + chunk
        elif (
            chunk.startswith(b"data: ")
            and chunk.find(_LF, 6) == len(chunk) - 2
            and chunk.endswith(b"\n\n")
            and _CR not in chunk
            and not self._data
        ):
            # What a model server sends per token, one event per read: `data: {...}` and a blank line.
            return [(self._reset(), chunk[6:-2].decode("utf-8", "replace"))]
        held = b""
        if _CR in chunk:
            if chunk[-1] == _CR:  # the next chunk may start with the LF of this CR LF: hold it back
                chunk, held = chunk[:-1], b"\r"
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = chunk.split(b"\n")
        self._tail = lines.pop() + held
        return self._lines(lines)

    def flush(self) -> list[ServerSentEvent]:
        """The body ended: its last line counts even without a line end."""
        tail, self._tail = self._tail, b""
        return self._lines([tail.removesuffix(b"\r")]) if tail else []

    def _lines(self, lines: list[bytes]) -> list[ServerSentEvent]:
        events: list[ServerSentEvent] = []
        for line in lines:
            if not line:
                if self._data:
                    data = "\n".join(self._data)
                    self._data = []
                    events.append((self._reset(), data))
                self._event = ""
            elif line[0] != _COLON:
                name, _, value = line.partition(b":")
                if value[:1] == b" ":
                    value = value[1:]
                if name == b"data":
                    self._data.append(value.decode("utf-8", "replace"))
                elif name == b"event":
                    self._event = value.decode("utf-8", "replace")
        return events

    def _reset(self) -> str:
        """The dispatched event's type; the next event starts without one."""
        event, self._event = self._event, ""
        return event
