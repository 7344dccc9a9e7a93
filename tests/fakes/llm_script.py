"""What the fake LLM server can be scripted to send: stream parts, chunk builders, reply helpers."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

DEEPSEEK_MISSING_REASONING = "The `reasoning_content` in the thinking mode must be passed back to the API."


# --- script parts -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Data:
    """One `data:` event; `payload` is JSON-encoded unless it is already a string."""

    payload: Any


@dataclass(frozen=True)
class Comment:
    text: str = "keep-alive"


@dataclass(frozen=True)
class Pause:
    seconds: float


@dataclass(frozen=True)
class Drop:
    """Close the connection mid-stream, without the chunked terminator."""


@dataclass(frozen=True)
class Reset:
    """Reset the connection (a TCP RST): in place of a reply, before its head; or as a part of a stream."""


@dataclass(frozen=True)
class Gate:
    """Wait here until the test calls `FakeLLM.open_gate(name)` (a model thinking for as long as needed)."""

    name: str = "gate"


Part = Data | Comment | Pause | Drop | Reset | Gate


@dataclass(frozen=True)
class Stream:
    parts: list[Part]
    done: bool = True  # send `data: [DONE]` before ending the stream normally


@dataclass(frozen=True)
class HTTPError:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Echo:
    """An HTTP error whose body quotes the whole request, as some servers' validation errors do."""

    status: int = 400


Reply = Stream | HTTPError | Echo | Reset


# --- chunk builders ---------------------------------------------------------------------------


def chunk(delta: dict[str, Any] | None = None, finish_reason: str | None = None, model: str = "fake") -> Data:
    return Data(
        {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "model": model,
            "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish_reason}],
        }
    )


def content_chunk(text: str) -> Data:
    return chunk({"content": text})


def reasoning_chunk(text: str) -> Data:
    return chunk({"reasoning_content": text})


def tool_fragment(index: int, arguments: str, *, call_id: str | None = None, name: str | None = None) -> Data:
    """A tool-call delta; like Qwen, pass id and name only on the first fragment."""
    fragment: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if call_id is not None:
        fragment.update(id=call_id, type="function")
    if name is not None:
        fragment["function"]["name"] = name
    return chunk({"tool_calls": [fragment]})


def finish_chunk(reason: str) -> Data:
    return chunk({}, finish_reason=reason)


def usage_chunk(prompt_tokens: int = 11, completion_tokens: int = 7) -> Data:
    return Data(
        {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "choices": [],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
    )


def error_chunk(message: str = "internal error", kind: str = "server_error") -> Data:
    return Data({"error": {"message": message, "type": kind, "code": kind}})


def split(text: str, parts: int) -> list[str]:
    size = max(1, -(-len(text) // max(parts, 1)))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


# --- reply helpers ----------------------------------------------------------------------------


def text_reply(
    text: str,
    chunks: int = 3,
    *,
    reasoning: str | None = None,
    usage: tuple[int, int] | None = (11, 7),
    keepalive: bool = False,
    done: bool = True,
    gate_after: int | None = None,
) -> Stream:
    """An answer streamed in `chunks` content deltas, after an optional reasoning trace.

    `gate_after=n`: after the n-th delta the reply waits at a Gate until the test opens it.
    """
    parts: list[Part] = [chunk({"role": "assistant", "content": ""})]
    if keepalive:
        parts.append(Comment())
    parts += [reasoning_chunk(piece) for piece in split(reasoning, 2)] if reasoning else []
    for n, piece in enumerate(split(text, chunks), 1):
        parts.append(content_chunk(piece))
        if keepalive:
            parts.append(Comment())
        if n == gate_after:
            parts.append(Gate())
    parts.append(finish_chunk("stop"))
    if usage:
        parts.append(usage_chunk(*usage))
    return Stream(parts, done=done)


def tool_calls_reply(
    calls: list[tuple[str, dict[str, Any] | str, str]],
    *,
    fragments: int = 3,
    reasoning: str | None = None,
    content: str = "",
    usage: tuple[int, int] | None = (20, 9),
) -> Stream:
    """Tool calls `(name, arguments, id)`, each argument text split in `fragments` Qwen-style deltas."""
    parts: list[Part] = [chunk({"role": "assistant", "content": ""})]
    parts += [reasoning_chunk(piece) for piece in split(reasoning, 2)] if reasoning else []
    parts += [content_chunk(content)] if content else []
    for index, (name, arguments, call_id) in enumerate(calls):
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        for n, piece in enumerate(split(text, fragments)):
            first = n == 0
            parts.append(
                tool_fragment(index, piece, call_id=call_id if first else None, name=name if first else None)
            )
    parts.append(finish_chunk("tool_calls"))
    if usage:
        parts.append(usage_chunk(*usage))
    return Stream(parts)


def tool_call_reply(
    name: str, arguments: dict[str, Any] | str, *, call_id: str = "call_1", **options: Any
) -> Stream:
    return tool_calls_reply([(name, arguments, call_id)], **options)


def reasoning_tool_call_reply(
    reasoning: str, name: str, arguments: dict[str, Any] | str, *, call_id: str = "call_1"
) -> Stream:
    return tool_calls_reply([(name, arguments, call_id)], reasoning=reasoning)


def error_reply(
    status: int, message: str | None = None, *, kind: str | None = None, retry_after: float | None = None
) -> HTTPError:
    kind = kind or (
        "rate_limit_error" if status == 429 else "invalid_request_error" if status < 500 else "server_error"
    )
    body = {
        "error": {"message": message or HTTPStatus(status).phrase, "type": kind, "param": None, "code": kind}
    }
    headers = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else {}
    return HTTPError(status, body, headers)
