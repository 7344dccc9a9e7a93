"""A small HTTP/1.1 client for the model's answer stream: one POST, its body read as it arrives.

A model streams one token per HTTP chunk and per socket read. Through httpx every such read passes
httpx, httpcore, anyio and h11 (its event objects, a regex per chunk header): ~12 µs of CPU a token,
as much as the rest of the turn's work on it (bench/README.md, streaming). Here a read is one
`StreamReader.read` and a few byte checks. It speaks what a chat-completions stream needs and no
more: a request with a JSON body; a response framed by chunks, a length or the end of the connection;
keep-alive connections pooled per origin (per event loop); gzip or deflate bodies; TLS with the
process's shared context (tls.py). Everything else (proxies, a client of one's own) goes through
httpx (providers/transport.py decides).
"""

from __future__ import annotations

import asyncio
import ssl
import zlib
from urllib.parse import urlsplit

from rag_orchestrator import tls

HEAD_LIMIT = 65536  # bytes of status line and headers
READ_SIZE = 65536
MAX_IDLE = 20  # pooled connections kept, all origins together
_CRLF = b"\r\n"

Origin = tuple[str, str, int]  # scheme, host, port


class HTTPFailure(Exception):
    """The connection failed or the server broke HTTP/1.1: worth another try before any output."""


class _Connection:
    __slots__ = ("origin", "reader", "writer")

    def __init__(self, origin: Origin, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.origin = origin
        self.reader = reader
        self.writer = writer

    def usable(self) -> bool:
        """Still open as far as this process knows (a server that closed it meanwhile shows as EOF)."""
        return not self.writer.is_closing() and not self.reader.at_eof()

    def close(self) -> None:
        self.writer.close()


class ChunkedBody:
    """Decodes `Transfer-Encoding: chunked`; `feed` returns the data of the chunks completed so far."""

    def __init__(self) -> None:
        self._buffer = b""
        self._left = 0  # data bytes of the current chunk still to come
        self._crlf = False  # the current chunk's data is read; its CR LF is not
        self._trailers = False  # the last chunk came; reading trailer lines up to the blank one
        self.done = False
        self.extra = False  # bytes after the body: the connection cannot be reused

    def feed(self, data: bytes) -> bytes:
        if not self._buffer and not self._left and not self._crlf and not self._trailers:
            # What a model server sends per token: one whole chunk in one read.
            end = data.find(_CRLF)
            if 0 < end < 10 and data[-2:] == _CRLF:
                try:
                    size = int(data[:end], 16)
                except ValueError:
                    size = -1
                if size > 0 and len(data) == end + size + 4:
                    return data[end + 2 : end + 2 + size]
        self._buffer += data
        out: list[bytes] = []
        while self._buffer and not self.done:
            if self._left:
                piece = self._buffer[: self._left]
                self._buffer = self._buffer[len(piece) :]
                self._left -= len(piece)
                out.append(piece)
                self._crlf = not self._left
            elif self._crlf:
                if len(self._buffer) < 2:
                    break
                if self._buffer[:2] != _CRLF:
                    raise HTTPFailure("a chunk did not end with CR LF")
                self._buffer, self._crlf = self._buffer[2:], False
            else:
                end = self._buffer.find(_CRLF)
                if end < 0:
                    if len(self._buffer) > 4096:
                        raise HTTPFailure("a chunk header is too long")
                    break
                line, self._buffer = self._buffer[:end], self._buffer[end + 2 :]
                if self._trailers:
                    self.done = not line
                    continue
                try:
                    size = int(line.split(b";", 1)[0].strip(), 16)
                except ValueError:
                    raise HTTPFailure("a chunk size is not hexadecimal") from None
                if size < 0:
                    raise HTTPFailure("a chunk size is negative")
                self._left, self._trailers = size, size == 0
        self.extra = self.done and bool(self._buffer)
        return b"".join(out)


class Response:
    """Status and headers are read; the body is read with `next_chunk()`, then `aclose()`."""

    def __init__(self, pool: Pool, connection: _Connection, status: int, headers: dict[str, str]) -> None:
        self.status = status
        self.headers = headers  # lower-case names; a repeated header keeps its last value
        self._pool = pool
        self._connection: _Connection | None = connection
        self._reader = connection.reader
        self._chunked: ChunkedBody | None = None
        self._left = -1  # bytes of a Content-Length body still to come; -1: chunked or until close
        self._keep = headers.get("connection", "").lower() != "close"
        self._inflate: zlib._Decompress | None = None
        if "chunked" in headers.get("transfer-encoding", "").lower():
            self._chunked = ChunkedBody()
        elif "content-length" in headers:
            try:
                self._left = int(headers["content-length"])
            except ValueError:
                raise HTTPFailure("Content-Length is not a number") from None
        else:
            self._keep = False  # the body ends with the connection
        if status in (204, 304):
            self._left, self._chunked = 0, None
        encoding = headers.get("content-encoding", "identity").lower()
        if encoding in ("gzip", "x-gzip", "deflate"):
            self._inflate = zlib.decompressobj(47 if encoding != "deflate" else zlib.MAX_WBITS)
        elif encoding != "identity":
            raise HTTPFailure("the body came in an encoding that was not asked for")
        self.done = self._left == 0

    async def next_chunk(self) -> bytes | None:
        """The body's next bytes as they arrive (never empty); None once it has ended."""
        while not self.done:
            data = await self._reader.read(READ_SIZE if self._left < 0 else min(self._left, READ_SIZE))
            if self._chunked is not None:
                if not data:
                    raise HTTPFailure("the connection closed inside a chunked body")
                data = self._chunked.feed(data)
                self.done = self._chunked.done
                self._keep = self._keep and not self._chunked.extra
            elif not data:
                if self._left > 0:
                    raise HTTPFailure("the connection closed before Content-Length bytes came")
                self.done = True
            elif self._left > 0:
                self._left -= len(data)
                self.done = not self._left
            if self._inflate is not None and data:
                data = self._inflate.decompress(data)
            if data:
                return data
        return None

    async def aclose(self) -> None:
        """Back to the pool when the body was read whole and the server keeps the connection; else closed."""
        connection, self._connection = self._connection, None
        if connection is not None:
            self._pool.release(connection, self.done and self._keep)


class Pool:
    """Keep-alive connections of one event loop, by origin."""

    def __init__(self, context: ssl.SSLContext | None = None) -> None:
        self._context = context
        self._idle: list[_Connection] = []

    async def post(
        self, url: str, headers: dict[str, str], body: bytes, *, connect_timeout: float
    ) -> Response:
        """Sends the request; the response once its head has come. A pooled connection the server
        closed meanwhile is replaced once, silently (nothing of the request reached it)."""
        parts = urlsplit(url)
        scheme, host = parts.scheme.lower(), parts.hostname or ""
        if scheme not in ("http", "https") or not host:
            raise ValueError(f"not an http(s) URL: {url!r}")
        origin = (scheme, host, parts.port or (443 if scheme == "https" else 80))
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        authority = (f"[{host}]" if ":" in host else host) + (f":{parts.port}" if parts.port else "")
        head = [f"POST {target} HTTP/1.1", f"Host: {authority}", f"Content-Length: {len(body)}"]
        head += [f"{name}: {value}" for name, value in headers.items()]
        request = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body
        connection = self._take(origin)
        if connection is not None:
            try:
                return await self._exchange(connection, request)
            except HTTPFailure:
                pass  # the server closed it while it was idle: once more, on a new connection
        connection = await self._connect(origin, connect_timeout)
        return await self._exchange(connection, request)

    async def _exchange(self, connection: _Connection, request: bytes) -> Response:
        try:
            connection.writer.write(request)
            await connection.writer.drain()
            status, headers = 100, dict[str, str]()
            while 100 <= status < 200:  # informational answers (103 Early Hints) come before the real one
                status, headers = _parse_head(await connection.reader.readuntil(b"\r\n\r\n"))
            response = Response(self, connection, status, headers)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, HTTPFailure) as exc:
            connection.close()
            raise exc if isinstance(exc, HTTPFailure) else HTTPFailure(type(exc).__name__) from None
        except BaseException:
            connection.close()
            raise
        return response

    async def _connect(self, origin: Origin, seconds: float) -> _Connection:
        scheme, host, port = origin
        secure = scheme == "https"
        try:
            async with asyncio.timeout(seconds):
                reader, writer = await asyncio.open_connection(
                    host,
                    port,
                    ssl=(self._context or tls.context()) if secure else None,
                    server_hostname=host if secure else None,
                    limit=HEAD_LIMIT,
                )
        except TimeoutError:
            raise HTTPFailure("connect timeout") from None
        except (OSError, ssl.SSLError) as exc:
            raise HTTPFailure(type(exc).__name__) from None
        return _Connection(origin, reader, writer)

    def _take(self, origin: Origin) -> _Connection | None:
        while self._idle:
            for index in range(len(self._idle) - 1, -1, -1):
                if self._idle[index].origin == origin:
                    connection = self._idle.pop(index)
                    break
            else:
                return None
            if connection.usable():
                return connection
            connection.close()
        return None

    def release(self, connection: _Connection, keep: bool) -> None:
        if keep and connection.usable():
            self._idle.append(connection)
            while len(self._idle) > MAX_IDLE:
                self._idle.pop(0).close()
        else:
            connection.close()

    def close(self) -> None:
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()


def _parse_head(head: bytes) -> tuple[int, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    code = rest[:3]
    if not version.startswith("HTTP/1.") or not code.isdigit():
        raise HTTPFailure("the answer is not HTTP/1.x")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if line:
            name, colon, value = line.partition(":")
            if not colon:
                raise HTTPFailure("a header line has no colon")
            headers[name.strip().lower()] = value.strip()
    if version == "HTTP/1.0" and headers.get("connection", "").lower() != "keep-alive":
        headers["connection"] = "close"
    return int(code), headers
