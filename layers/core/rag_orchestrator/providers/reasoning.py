"""Reasoning traces: sanitized before the audit log (docs/audit.md), split from content when inline."""

from __future__ import annotations

import re
from collections.abc import Iterable

_UUID = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
_CALL_ID = re.compile(r"\b(?:call|chatcmpl|toolu|tool|fc|msg|conv)[_-][A-Za-z0-9_-]{2,}\b")
_HEX_ID = re.compile(r"\b[0-9a-fA-F]{16,}\b")
# Long base64/url-safe runs that mix letters and digits: tokens, keys, opaque ids.
_OPAQUE = re.compile(
    r"(?<![A-Za-z0-9+/_-])(?=[A-Za-z0-9+/_-]*\d)(?=[A-Za-z0-9+/_-]*[A-Za-z])[A-Za-z0-9+/_-]{24,}={0,2}"
)
# A JSON-ish object with at least one quoted key, nested one level deep at most.
_JSON_OBJECT = re.compile(r"\{\s*\"[^\"]*\"\s*:(?:[^{}]|\{[^{}]*\})*\}")
_SPACES = re.compile(r"[ \t]{2,}")

ID = "[id]"
TOOL = "[tool]"
ARGUMENTS = "[arguments]"


def sanitize_reasoning(text: str, *, tool_names: Iterable[str] = (), extra_ids: Iterable[str] = ()) -> str:
    """The trace without ids, tool names and their arguments: safe for the audit log."""
    for value in sorted({v for v in extra_ids if v}, key=len, reverse=True):
        text = text.replace(value, ID)
    for name in sorted({n for n in tool_names if n}, key=len, reverse=True):
        call = re.compile(
            rf"`?\b{re.escape(name)}\b`?(?:\s*\([^)]*\)|\s*(?:with|:|=)?\s*\{{(?:[^{{}}]|\{{[^{{}}]*\}})*\}})?"
        )
        text = call.sub(TOOL, text)
    text = _JSON_OBJECT.sub(ARGUMENTS, text)
    text = _UUID.sub(ID, text)
    text = _CALL_ID.sub(ID, text)
    text = _HEX_ID.sub(ID, text)
    text = _OPAQUE.sub(ID, text)
    return _SPACES.sub(" ", text).strip()


class ThinkTagSplitter:
    """Routes a leading `<think>…</think>` block of streamed content to reasoning.

    Some OpenAI-compatible servers (a model without a reasoning parser) inline the trace in
    `content`; left there, it would reach the client.
    """

    OPEN, CLOSE = "<think>", "</think>"

    def __init__(self) -> None:
        self._state = "start"
        self._buffer = ""

    def feed(self, text: str) -> tuple[str, str]:
        """Returns (content, reasoning) that can be released now."""
        self._buffer += text
        if self._state == "start":
            head = self._buffer.lstrip()
            if not head or (len(head) < len(self.OPEN) and self.OPEN.startswith(head)):
                return "", ""
            if not head.startswith(self.OPEN):
                self._state = "content"
            else:
                self._state = "think"
                self._buffer = head[len(self.OPEN) :]
        if self._state == "think":
            end = self._buffer.find(self.CLOSE)
            if end >= 0:
                reasoning, rest = self._buffer[:end], self._buffer[end + len(self.CLOSE) :].lstrip()
                self._state, self._buffer = "content", ""
                return rest, reasoning
            keep = _partial_suffix(self._buffer, self.CLOSE)
            cut = len(self._buffer) - keep
            reasoning, self._buffer = self._buffer[:cut], self._buffer[cut:]
            return "", reasoning
        content, self._buffer = self._buffer, ""
        return content, ""

    def flush(self) -> tuple[str, str]:
        """What is left at the end of the stream; an unclosed block stays reasoning."""
        rest, self._buffer = self._buffer, ""
        return ("", rest) if self._state == "think" else (rest, "")


def _partial_suffix(text: str, tag: str) -> int:
    """Length of the longest suffix of text that could start tag."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0
