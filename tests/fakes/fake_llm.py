"""A fake OpenAI-compatible chat server on loopback: real HTTP/1.1 and SSE on a socket.

Tests script it with a queue of replies; it records every request. Use the `fake_llm` fixture
(import it into a conftest), or `with FakeLLM() as fake:` outside pytest (benchmarks).

    fake_llm.script(tool_call_reply("rag_search", {"query": "refunds"}), text_reply("Refunds take 14 days."))
    settings = load_settings(**fake_llm.settings_for("qwen_single_instruct"))
    ...
    assert fake_llm.requests[1]["messages"][-1]["role"] == "tool"
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from http import HTTPStatus
from typing import Any

import pytest

from tests.fakes.llm_media import Image, completion_body, form_fields, images_in
from tests.fakes.llm_script import (
    DEEPSEEK_MISSING_REASONING,
    Comment,
    Data,
    Drop,
    Echo,
    Gate,
    HTTPError,
    Pause,
    Reply,
    Reset,
    Stream,
    chunk,
    content_chunk,
    error_chunk,
    error_reply,
    finish_chunk,
    reasoning_chunk,
    reasoning_tool_call_reply,
    split,
    text_reply,
    tool_call_reply,
    tool_calls_reply,
    tool_fragment,
    usage_chunk,
)

__all__ = [
    "DEEPSEEK_MISSING_REASONING",
    "Comment",
    "Data",
    "Drop",
    "Echo",
    "FakeLLM",
    "Gate",
    "HTTPError",
    "Image",
    "Pause",
    "Reply",
    "Reset",
    "Stream",
    "chunk",
    "content_chunk",
    "error_chunk",
    "error_reply",
    "fake_llm",
    "finish_chunk",
    "reasoning_chunk",
    "reasoning_tool_call_reply",
    "split",
    "text_reply",
    "tool_call_reply",
    "tool_calls_reply",
    "tool_fragment",
    "usage_chunk",
]


class FakeLLM:
    """Serves `POST /v1/chat/completions` from `script()`ed replies (streamed, or whole for `stream: false`),
    checks and records image content parts, and answers `/v1/audio/transcriptions` with `transcript`."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.port = 0
        self.requests: list[dict[str, Any]] = []  # request bodies, in arrival order
        self.headers: list[dict[str, str]] = []  # request headers (lower-case names)
        self.default: Reply | None = None  # served when the script is empty; else HTTP 400
        # Asked first, with each request's body: a reply of its own (e.g. to the title call), or None.
        self.answer_first: Callable[[dict[str, Any]], Reply | None] | None = None
        self.deepseek_thinking = False  # refuse tool-call turns without reasoning_content, as DeepSeek does
        self.api_key: str | None = None  # when set, anything else gets HTTP 401
        self.connections = 0  # connections accepted
        self.connections_closed = 0  # connections ended, by either side
        self.content_sent_at: list[float] = []  # time.monotonic() as each reply's first content was written
        self.request_at: list[float] = []  # time.monotonic() as each request's first line arrived
        self.images: list[Image] = []  # image content parts received, decoded, in arrival order
        self.transcript = ""  # what `/audio/transcriptions` answers
        self.audio: list[dict[str, tuple[str | None, bytes]]] = []  # the multipart fields it received
        self._script: deque[Reply] = deque()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._gates: dict[str, asyncio.Event] = {}  # made and set on the server's loop
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        """Base URL, as the settings take it (`…/v1`)."""
        return f"http://{self.host}:{self.port}/v1"

    def script(self, *replies: Reply) -> FakeLLM:
        with self._lock:
            self._script.extend(replies)
        return self

    def open_gate(self, name: str = "gate") -> None:
        """Let every reply waiting at Gate(name) go on, and any that reaches it later."""
        assert self._loop is not None
        self._loop.call_soon_threadsafe(lambda: self._gate(name).set())

    def _gate(self, name: str) -> asyncio.Event:
        return self._gates.setdefault(name, asyncio.Event())

    @property
    def pending(self) -> int:
        return len(self._script)

    def reset(self) -> None:
        with self._lock:
            self._script.clear()
            self.requests.clear()
            self.headers.clear()
            self.content_sent_at.clear()
            self.request_at.clear()
            self.images.clear()
            self.audio.clear()
        self._gates.clear()
        self.default, self.deepseek_thinking, self.api_key = None, False, None
        self.answer_first = None

    def settings_for(self, strategy: str, api_key: str = "test-key", **overrides: Any) -> dict[str, Any]:
        """`load_settings` keyword arguments that point `strategy` at this server."""
        values: dict[str, Any] = {"model_strategy": strategy}
        if strategy == "deepseek_single":
            values.update(deepseek_base_url=self.url, deepseek_api_key=api_key)
        elif strategy.startswith("qwen_"):
            values.update(qwen_base_url=self.url, qwen_api_key=api_key)
        else:
            values.update(
                openai_compatible_base_url=self.url,
                openai_compatible_model="fake-model",
                openai_compatible_api_key=api_key,
            )
        values.update(overrides)
        return values

    # lifecycle

    def start(self) -> FakeLLM:
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), name="fake-llm", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("fake LLM server did not start")
        return self

    def stop(self) -> None:
        if self._loop is None or self._thread is None:
            return
        asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop = self._thread = None

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self, ready: threading.Event) -> None:
        loop = self._loop = asyncio.new_event_loop()
        self._server = loop.run_until_complete(asyncio.start_server(self._connection, self.host, 0))
        self.port = self._server.sockets[0].getsockname()[1]
        ready.set()
        loop.run_forever()
        loop.close()

    async def _shutdown(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    # HTTP

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self.connections += 1
        try:
            while await self._exchange(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            pass  # stopped while a reply waited (a Pause, a Gate): nothing to report
        finally:
            self._tasks.discard(task)
            self.connections_closed += 1
            writer.close()

    async def _exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """One request and its reply; False when the connection must end."""
        line = await reader.readline()
        if not line.strip():
            return False
        self.request_at.append(time.monotonic())  # for the benchmarks
        method, path, _ = line.decode("latin-1").split(" ", 2)
        headers: dict[str, str] = {}
        while (raw := await reader.readline()) not in (b"\r\n", b"\n", b""):
            name, _, value = raw.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        if method == "POST" and path.split("?")[0].rstrip("/") in (
            "/v1/audio/transcriptions",
            "/audio/transcriptions",
        ):
            with self._lock:
                self.audio.append(form_fields(headers.get("content-type", ""), body))
                self.headers.append(headers)
            await self._send_json(writer, HTTPError(200, {"text": self.transcript}))
            return True
        if method != "POST" or path.split("?")[0].rstrip("/") not in (
            "/v1/chat/completions",
            "/chat/completions",
        ):
            await self._send_json(
                writer, HTTPError(404, {"error": {"message": "not found", "type": "not_found"}})
            )
            return True
        try:
            request = json.loads(body or b"{}")
        except ValueError:
            await self._send_json(writer, error_reply(400, "body is not JSON"))
            return True
        with self._lock:
            self.requests.append(request)
            self.headers.append(headers)
        try:
            images = images_in(request)
        except ValueError as exc:  # as OpenAI answers a malformed content part
            await self._send_json(writer, error_reply(400, str(exc)))
            return True
        with self._lock:
            self.images.extend(images)
        reply = self._refusal(request, headers) or self._next_reply(request)
        if isinstance(reply, Echo):
            message = f"Invalid request body: {json.dumps(request)}"
            reply = HTTPError(reply.status, {"error": {"message": message, "type": "invalid_request_error"}})
        if isinstance(reply, Reset):
            _reset(writer)
            return False
        if isinstance(reply, HTTPError):
            await self._send_json(writer, reply)
            return True
        if request.get("stream") is False:
            await self._send_json(writer, HTTPError(200, completion_body(reply)))
            return True
        return await self._send_stream(writer, reply)

    def _refusal(self, request: dict[str, Any], headers: dict[str, str]) -> HTTPError | None:
        if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
            return error_reply(
                401, "Authentication Fails, Your api key is invalid", kind="authentication_error"
            )
        if self.deepseek_thinking:
            for message in request.get("messages", []):
                tool_call_turn = message.get("role") == "assistant" and message.get("tool_calls")
                if tool_call_turn and not isinstance(message.get("reasoning_content"), str):
                    return error_reply(400, DEEPSEEK_MISSING_REASONING)
        return None

    def _next_reply(self, request: dict[str, Any]) -> Reply:
        if self.answer_first is not None and (own := self.answer_first(request)) is not None:
            return own
        with self._lock:
            if self._script:
                return self._script.popleft()
        if self.default is not None:
            return self.default
        return error_reply(400, "fake_llm: no scripted reply left", kind="fake_llm_unscripted")

    async def _send_json(self, writer: asyncio.StreamWriter, reply: HTTPError) -> None:
        body = (reply.body if isinstance(reply.body, str) else json.dumps(reply.body or {})).encode()
        head = [
            f"HTTP/1.1 {reply.status} {HTTPStatus(reply.status).phrase}",
            "Content-Type: application/json",
        ]
        head += [f"{k}: {v}" for k, v in reply.headers.items()] + [f"Content-Length: {len(body)}"]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        await writer.drain()

    async def _send_stream(self, writer: asyncio.StreamWriter, reply: Stream) -> bool:
        head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
        writer.write((head + "Transfer-Encoding: chunked\r\n\r\n").encode())
        content_sent = False
        for part in reply.parts:
            match part:
                case Data(payload=payload):
                    text = payload if isinstance(payload, str) else json.dumps(payload)
                    await self._send_chunk(writer, f"data: {text}\n\n")
                    if not content_sent and _has_content(payload):
                        content_sent = True
                        self.content_sent_at.append(time.monotonic())  # for the benchmarks
                case Comment(text=text):
                    await self._send_chunk(writer, f": {text}\n\n")
                case Pause(seconds=seconds):
                    await asyncio.sleep(seconds)
                case Gate(name=name):
                    await self._gate(name).wait()
                case Drop():
                    writer.close()  # a FIN without the chunked terminator: an incomplete body
                    return False
                case Reset():
                    await writer.drain()
                    _reset(writer)
                    return False
        if reply.done:
            await self._send_chunk(writer, "data: [DONE]\n\n")
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True

    @staticmethod
    async def _send_chunk(writer: asyncio.StreamWriter, text: str) -> None:
        data = text.encode()
        writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        await writer.drain()


def _reset(writer: asyncio.StreamWriter) -> None:
    """Ends the connection with a TCP RST (no linger), as a crashed server or a middlebox does."""
    writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


def _has_content(payload: object) -> bool:
    choices = payload.get("choices") if isinstance(payload, dict) else None
    return bool(choices and (choices[0].get("delta") or {}).get("content"))


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    """A fresh fake OpenAI-compatible server for one test."""
    with FakeLLM() as server:
        yield server
