"""One exchange with an MCP server over streamable HTTP: JSON-RPC requests, each a POST answered in
JSON or as an event stream, in either generation of the protocol (docs/mcp.md).

- **2026-07-28** (`LATEST`): every request stands alone. It carries the protocol version, the client and
  its (no) capabilities in `params._meta`, and the version, the method and a call's tool name in headers
  (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`). `server/discover` tells such a server.
- **The 2025 revisions and 2024-11-05** (`HANDSHAKE`): `initialize`, `notifications/initialized`, then
  the request under the session's `Mcp-Session-Id`; the session is deleted at the end.

A server's requests on an event stream (sampling, elicitation, roots) are refused as the SDK's client
refuses them when it has no callback for them. An HTTP error status becomes the JSON-RPC error its body
holds, else the SDK client's stand-in for it, so that a failure reads the same as with the SDK. Answers are
read up to `limit` bytes for the whole exchange.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import httpx

from rag_orchestrator.event_stream import EventStreamDecoder
from rag_orchestrator.tools.mcp_exchange import AUTO, LEGACY, Connection
from rag_orchestrator.tools.mcp_headers import encoded

LATEST = "2026-07-28"
HANDSHAKE = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
# JSON-RPC error codes, the protocol's own among them
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INTERNAL_ERROR = -32700, -32600, -32601, -32603
HEADER_MISMATCH, UNSUPPORTED_VERSION, REQUEST_TIMEOUT = -32020, -32022, -32001
MAX_REDIRECTS = 20
CLOSE_SECONDS = 2.0  # a legacy session's DELETE, after the answer is in: never worth more
_ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
_REFUSED = {
    "sampling/createMessage": "Sampling not supported",
    "elicitation/create": "Elicitation not supported",
    "roots/list": "List roots not supported",
}
_NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}  # mirrored as Mcp-Name


class RpcError(Exception):
    """The server answered a request with a JSON-RPC error (or an HTTP status standing for one)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code, self.message, self.data = code, message, data


class TooLarge(Exception):
    """The exchange's answers passed its byte limit."""


class NoAnswer(Exception):
    """An event stream ended without the answer to the request."""


class McpSession:
    def __init__(
        self, http: httpx.AsyncClient, connection: Connection, limit: int, client_info: dict[str, str]
    ) -> None:
        self.http, self.connection, self.limit = http, connection, limit
        self.received = 0
        self.version: str | None = None  # the modern protocol in use; None: the handshake's
        self.negotiated: str | None = None  # the handshake's protocol, once initialized
        self.session_id: str | None = None
        self._client_info = client_info
        self._ids = itertools.count(1)

    @property
    def mode(self) -> str:
        """How the next exchange with this server connects: its modern protocol, or LEGACY."""
        return self.version or LEGACY

    @property
    def exceeded(self) -> bool:
        return self.received > self.limit

    async def open(self, mode: str) -> None:
        """Connect as `mode` says: AUTO finds out (a modern server answers `server/discover`)."""
        if mode == AUTO:
            await self._discover()
        elif mode == LEGACY:
            await self._initialize()
        else:
            self.version = mode

    async def request(
        self, method: str, params: dict[str, Any] | None = None, headers: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """The request's result; RpcError for an error answer."""
        request_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if self.version is not None:
            message["params"] = {**(params or {}), "_meta": self._meta()}
        elif params is not None:
            message["params"] = params
        answer = await self._post(message, {**self._headers(method, params), **(headers or {})})
        if isinstance(error := answer.get("error"), dict):
            raise _rpc_error(error)
        result = answer.get("result")
        if not isinstance(result, dict):
            raise RpcError(PARSE_ERROR, "The answer holds no result")
        return result

    async def close(self) -> None:
        """End a handshake's session (best effort: the answer is already in)."""
        with contextlib.suppress(Exception):
            async with asyncio.timeout(CLOSE_SECONDS):
                async with self._stream("DELETE", b"", self._headers("", None)) as response:
                    await response.aread()

    # ------------------------------------------------------------------ connecting
    async def _discover(self) -> None:
        self.version = LATEST
        try:
            result = await self.request("server/discover")
        except RpcError as exc:
            self.version = None
            supported = exc.data.get("supported") if isinstance(exc.data, dict) else None
            no_handshake = isinstance(supported, list) and not any(v in HANDSHAKE for v in supported)
            if exc.code == UNSUPPORTED_VERSION and supported and no_handshake:
                raise  # a modern server of other versions only: no protocol in common
            await self._initialize()  # any other refusal: a server of the handshake
            return
        versions = result.get("supportedVersions")
        if not isinstance(versions, list) or LATEST not in versions:
            self.version = None
            await self._initialize()

    async def _initialize(self) -> None:
        params = {"protocolVersion": HANDSHAKE[-1], "capabilities": {}, "clientInfo": self._client_info}
        result = await self.request("initialize", params)
        version = result.get("protocolVersion")
        if version not in HANDSHAKE:
            raise RpcError(INVALID_REQUEST, f"Unsupported protocol version from the server: {version}")
        self.negotiated = str(version)
        await self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _meta(self) -> dict[str, Any]:
        return {
            "io.modelcontextprotocol/protocolVersion": self.version,
            "io.modelcontextprotocol/clientInfo": self._client_info,
            "io.modelcontextprotocol/clientCapabilities": {},
        }

    def _headers(self, method: str, params: Mapping[str, Any] | None) -> dict[str, str]:
        headers = {**self.connection.headers, **_ACCEPT}
        if self.version is not None:
            headers["mcp-protocol-version"] = self.version
            if method:  # not on a reply to the server
                headers["mcp-method"] = method
            if (key := _NAMED.get(method)) and isinstance(name := (params or {}).get(key), str):
                headers["mcp-name"] = encoded(name)
        else:
            if self.session_id is not None:
                headers["mcp-session-id"] = self.session_id
            if self.negotiated is not None:
                headers["mcp-protocol-version"] = self.negotiated
        return headers

    # ------------------------------------------------------------------ the wire
    async def _send(self, message: dict[str, Any]) -> None:
        """A notification or a reply: the server answers 202, with nothing to read."""
        async with self._stream("POST", _body(message), self._headers("", None)) as response:
            await self._read(response)

    async def _post(self, message: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
        """The JSON-RPC answer to `message`, from a JSON body or an event stream."""
        async with self._stream("POST", _body(message), headers) as response:
            status, kind = response.status_code, response.headers.get("content-type", "").lower()
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and self.received + int(declared) > self.limit:
                self.received += int(declared)
                raise TooLarge
            if status == 202:
                raise RpcError(INVALID_REQUEST, "server answered a request with 202 Accepted")
            if 300 <= status < 400:
                raise RpcError(INVALID_REQUEST, f"redirect not followed ({status})")
            if status >= 400:
                raise await self._refusal(response, status, kind)
            if message["method"] == "initialize":
                self.session_id = response.headers.get("mcp-session-id")
            if kind.startswith("application/json"):
                return _answer(_parsed(await self._read(response)), message["id"])
            if kind.startswith("text/event-stream"):
                return await self._from_events(response, message["id"])
            raise RpcError(INVALID_REQUEST, f"Unexpected content type: {kind}")

    @asynccontextmanager
    async def _stream(
        self, method: str, body: bytes, headers: dict[str, str]
    ) -> AsyncIterator[httpx.Response]:
        """The response, redirects followed while they keep the method and stay within the endpoint's
        origin (a trailing slash added, http to https), as the SDK's client follows them."""
        request = self.http.build_request(
            method, self.connection.url, content=body, headers=headers, timeout=self.connection.timeout
        )
        response = await self.http.send(request, stream=True, follow_redirects=False)
        for _ in range(MAX_REDIRECTS):
            following = response.next_request
            if (
                following is None
                or following.method != method
                or not _within_origin(request.url, following.url)
            ):
                break
            try:  # read to its end, so that its connection goes back to the pool
                await response.aread()
            finally:
                await response.aclose()
            request = following
            response = await self.http.send(request, stream=True, follow_redirects=False)
        try:
            yield response
        finally:
            await response.aclose()

    async def _refusal(self, response: httpx.Response, status: int, kind: str) -> RpcError:
        if kind.startswith("application/json"):
            with contextlib.suppress(RpcError, ValueError):
                parsed = json.loads(await self._read(response))
                if isinstance(parsed, dict) and isinstance(error := parsed.get("error"), dict):
                    return _rpc_error(error)
        if status == 404:
            if self.session_id is None:
                return RpcError(METHOD_NOT_FOUND, "Not Found")
            return RpcError(INVALID_REQUEST, "Session terminated")
        return RpcError(INTERNAL_ERROR, "Server returned an error response")

    async def _chunks(self, response: httpx.Response) -> AsyncIterator[bytes]:
        async for chunk in response.aiter_bytes():
            self.received += len(chunk)
            if self.exceeded:
                raise TooLarge
            yield chunk

    async def _read(self, response: httpx.Response) -> bytes:
        return b"".join([chunk async for chunk in self._chunks(response)])

    async def _from_events(self, response: httpx.Response, request_id: int) -> dict[str, Any]:
        decoder = EventStreamDecoder()
        async for chunk in self._chunks(response):
            for _, data in decoder.feed(chunk):
                if (answer := await self._event(data, request_id)) is not None:
                    return answer
        for _, data in decoder.flush():
            if (answer := await self._event(data, request_id)) is not None:
                return answer
        raise NoAnswer("the event stream ended without the answer")

    async def _event(self, data: str, request_id: int) -> dict[str, Any] | None:
        """The answer, when the event holds it; a question of the server's is refused; others are skipped."""
        message = _parsed(data)
        if not isinstance(message, dict):
            return None
        if message.get("id") == request_id and ("result" in message or "error" in message):
            return message
        method = message.get("method")
        if isinstance(method, str) and "id" in message:  # the server asks the client something
            said = _REFUSED.get(method, "Method not found")
            code = INVALID_REQUEST if method in _REFUSED else METHOD_NOT_FOUND
            error = {"code": code, "message": said}
            await self._send({"jsonrpc": "2.0", "id": message["id"], "error": error})
        return None


def _body(message: dict[str, Any]) -> bytes:
    return json.dumps(message, ensure_ascii=False).encode()


def _rpc_error(error: dict[str, Any]) -> RpcError:
    code = error.get("code")
    return RpcError(
        code if isinstance(code, int) else INTERNAL_ERROR, str(error.get("message", "")), error.get("data")
    )


def _within_origin(sent: httpx.URL, to: httpx.URL) -> bool:
    """The same scheme, host and port, or http to https on the same host (default ports)."""
    if to.userinfo and to.userinfo != sent.userinfo:
        return False
    if (to.scheme, to.host, to.port) == (sent.scheme, sent.host, sent.port):
        return True
    upgraded = (sent.scheme, to.scheme) == ("http", "https") and sent.port is None and to.port is None
    return upgraded and to.host == sent.host


def _parsed(body: bytes | str) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        raise RpcError(PARSE_ERROR, "Failed to parse JSON response") from None


def _answer(parsed: Any, request_id: int) -> dict[str, Any]:
    """The response to the request in a JSON body: the message itself, or one of a batch."""
    for message in parsed if isinstance(parsed, list) else [parsed]:
        answers = isinstance(message, dict) and ("result" in message or "error" in message)
        if answers and message.get("id") in (request_id, None):
            return message
    raise RpcError(PARSE_ERROR, "Failed to parse JSON response")
