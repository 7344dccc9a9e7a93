"""The model client's own HTTP/1.1 client against raw servers on loopback: framing, keep-alive, TLS,
failures, and httpx taking over when the environment names a proxy."""

from __future__ import annotations

import asyncio
import gzip
import ssl
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from rag_orchestrator.providers import transport
from rag_orchestrator.providers.http1 import HTTPFailure, Pool
from tests.fakes.certs import self_signed

SSE = b'data: {"choices":[{"delta":{"content":"Hi"}}]}\n\ndata: [DONE]\n\n'


def chunked(*parts: bytes) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in parts) + b"0\r\n\r\n"


def answer(body: bytes, *head: str, status: str = "200 OK", framing: str = "chunked") -> bytes:
    lines = [f"HTTP/1.1 {status}", "Content-Type: text/event-stream", *head]
    if framing == "chunked":
        lines.append("Transfer-Encoding: chunked")
        body = chunked(body)
    elif framing == "length":
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


class RawServer:
    """Answers each request on a connection with the next of `replies` (bytes, or a callable given
    the writer); records request heads and bodies, and counts connections."""

    def __init__(self, replies: list[bytes | Callable[[asyncio.StreamWriter], object]]) -> None:
        self.replies = replies
        self.heads: list[str] = []
        self.bodies: list[bytes] = []
        self.connections = 0
        self.writers: list[asyncio.StreamWriter] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.writers.append(writer)
        try:
            while self.replies:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
                length = next(
                    (
                        int(line.split(":")[1])
                        for line in head.split("\r\n")
                        if line.lower().startswith("content-length")
                    ),
                    0,
                )
                self.heads.append(head)
                self.bodies.append(await reader.readexactly(length))
                reply = self.replies.pop(0)
                if callable(reply):
                    reply(writer)
                    break
                writer.write(reply)
                await writer.drain()
                if b"Connection: close" in reply or not (b"chunked" in reply or b"Content-Length" in reply):
                    break  # the body ends with the connection
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            await asyncio.sleep(0.05)
            writer.close()


@pytest.fixture
async def serve() -> AsyncIterator[Callable[..., asyncio.Future[tuple[RawServer, str]]]]:
    servers: list[asyncio.Server] = []

    async def start(replies: list, context: ssl.SSLContext | None = None) -> tuple[RawServer, str]:
        raw = RawServer(replies)
        server = await asyncio.start_server(raw.handle, "127.0.0.1", 0, ssl=context)
        servers.append(server)
        port = server.sockets[0].getsockname()[1]
        return raw, f"{'https' if context else 'http'}://127.0.0.1:{port}/v1/chat/completions"

    yield start  # type: ignore[misc]
    for server in servers:
        server.close()


async def read_all(pool: Pool, url: str, body: bytes = b"{}") -> tuple[int, bytes, transport.ModelResponse]:
    response = await pool.post(url, {"Accept": "text/event-stream"}, body, connect_timeout=2)
    data = b""
    while (chunk := await response.next_chunk()) is not None:
        data += chunk
    await response.aclose()
    return response.status, data, response


async def test_the_request_goes_out_whole_and_the_chunked_answer_comes_back(serve):
    server, url = await serve([answer(SSE)])
    pool = Pool()
    status, data, _ = await read_all(pool, url, b'{"model":"m"}')
    assert (status, data) == (200, SSE)
    assert server.heads[0].startswith("POST /v1/chat/completions HTTP/1.1\r\n")
    assert f"Host: 127.0.0.1:{url.split(':')[2].split('/')[0]}" in server.heads[0]
    assert server.bodies == [b'{"model":"m"}']
    pool.close()


async def test_one_connection_serves_call_after_call(serve):
    server, url = await serve([answer(SSE), answer(b"{}", framing="length"), answer(SSE)])
    pool = Pool()
    for _ in range(3):
        assert (await read_all(pool, url))[1]
    assert server.connections == 1
    pool.close()


@pytest.mark.parametrize(
    ("reply", "reused"),
    [
        (answer(SSE, "Connection: close"), False),
        (answer(SSE, framing="close"), False),  # no length, not chunked: the body ends with the connection
        (answer(SSE, framing="length"), True),
        (answer(gzip.compress(SSE), "Content-Encoding: gzip"), True),
        (b"HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n" + answer(SSE), True),
    ],
)
async def test_each_framing_gives_the_same_body_and_says_whether_the_connection_stays(serve, reply, reused):
    server, url = await serve([reply, answer(SSE)])
    pool = Pool()
    status, data, _ = await read_all(pool, url)
    assert (status, data) == (200, SSE)
    assert (await read_all(pool, url))[1] == SSE
    assert server.connections == (1 if reused else 2)
    pool.close()


async def test_a_pooled_connection_the_server_closed_is_replaced_silently(serve):
    server, url = await serve([answer(SSE), answer(SSE)])
    pool = Pool()
    await read_all(pool, url)
    server.writers[0].close()  # the server's keep-alive ran out while the connection was idle
    await asyncio.sleep(0.1)
    assert (await read_all(pool, url))[1] == SSE
    assert server.connections == 2
    pool.close()


@pytest.mark.parametrize(
    "reply",
    [
        b"SSH-2.0-OpenSSH_9.6\r\n\r\n",  # not HTTP
        answer(SSE)[:-20],  # closed inside a chunked body
        answer(SSE, "Content-Encoding: br"),  # an encoding it was not offered
    ],
)
async def test_a_broken_answer_is_an_http_failure(serve, reply):
    _, url = await serve([lambda writer: (writer.write(reply), writer.close())])
    pool = Pool()
    with pytest.raises(HTTPFailure):
        await read_all(pool, url)
    pool.close()


async def test_a_refused_connection_is_an_http_failure(serve):
    _, url = await serve([])
    port = url.split(":")[2].split("/")[0]
    pool = Pool()
    with pytest.raises(HTTPFailure):
        await read_all(pool, url.replace(port, "9"))  # discard: nothing listens there


async def test_tls_is_verified_against_the_context(serve, tmp_path: Path):
    cert, key = self_signed(tmp_path)
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(cert, key)
    _, url = await serve([answer(SSE), answer(SSE)], context=server_context)
    with pytest.raises(HTTPFailure):  # the shared context (certifi's bundle) does not trust it
        await read_all(Pool(), url)
    trusting = ssl.create_default_context(cafile=str(cert))
    pool = Pool(trusting)
    assert (await read_all(pool, url))[1] == SSE
    pool.close()


async def test_with_a_proxy_in_the_environment_httpx_carries_the_request(serve, monkeypatch):
    proxy, proxy_url = await serve([answer(SSE)])
    monkeypatch.setenv("HTTP_PROXY", proxy_url.rsplit("/v1", 1)[0])
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    url = "http://model.invalid/v1/chat/completions"
    via_httpx = transport.uses_httpx(url, None)
    response = await transport.post(url, {}, b"{}", connect_timeout=2, read_timeout=2, via_httpx=via_httpx)
    data = b""
    while (chunk := await response.next_chunk()) is not None:
        data += chunk
    await response.aclose()
    await transport.close_shared_connections()
    assert data == SSE
    assert proxy.heads[0].startswith("POST http://model.invalid/v1/chat/completions HTTP/1.1")
