"""The model client's HTTP against raw servers on loopback: framing, keep-alive, failures, TLS, proxies,
and never a request sent twice but by the retry policy."""

from __future__ import annotations

import asyncio
import gzip
import socket
import ssl
import struct
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from rag_orchestrator import tls
from rag_orchestrator.errors import ConfigError, ProviderStreamError
from rag_orchestrator.providers.openai_compat import ChatClient, RetryPolicy
from tests.fakes.certs import self_signed

pytestmark = pytest.mark.integration

SSE = b'data: {"choices":[{"delta":{"content":"Hi"}}]}\n\ndata: [DONE]\n\n'
PAYLOAD = {"model": "m", "messages": [], "stream": True}


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


def reset(writer: asyncio.StreamWriter) -> None:
    """A TCP RST once the request has come."""
    writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


class RawServer:
    """Answers each request on a connection with the next of `replies` (bytes, or a callable given
    the writer); records request heads, and counts connections."""

    def __init__(self, replies: list[bytes | Callable[[asyncio.StreamWriter], object]]) -> None:
        self.replies = replies
        self.heads: list[str] = []
        self.connections = 0
        self.writers: list[asyncio.StreamWriter] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.writers.append(writer)
        try:
            while self.replies:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
                length = next(
                    int(line.split(":")[1])
                    for line in head.split("\r\n")
                    if line.lower().startswith("content-length")
                )
                await reader.readexactly(length)
                self.heads.append(head)
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
            writer.close()


@pytest.fixture
async def serve() -> AsyncIterator[Callable[..., asyncio.Future[tuple[RawServer, str]]]]:
    servers: list[asyncio.Server] = []

    async def start(replies: list, context: ssl.SSLContext | None = None) -> tuple[RawServer, str]:
        raw = RawServer(replies)
        server = await asyncio.start_server(raw.handle, "127.0.0.1", 0, ssl=context)
        servers.append(server)
        port = server.sockets[0].getsockname()[1]
        return raw, f"{'https' if context else 'http'}://127.0.0.1:{port}/v1"

    yield start  # type: ignore[misc]
    for server in servers:
        server.close()


def chat_client(base_url: str, retries: int = 0, api_key: str | None = "k") -> ChatClient:
    return ChatClient(
        provider="test",
        base_url=base_url,
        api_key=api_key,
        timeout_seconds=5,
        idle_timeout_seconds=5,
        retry=RetryPolicy(max_retries=retries, base_seconds=0.01, cap_seconds=0.01),
    )


async def text(client: ChatClient) -> str:
    return "".join([delta.content or "" async for delta in client.stream(PAYLOAD)])


async def test_the_request_goes_out_once_and_the_answer_comes_back(serve):
    server, url = await serve([answer(SSE)])
    client = chat_client(url)
    assert await text(client) == "Hi"
    assert server.heads[0].startswith("POST /v1/chat/completions HTTP/1.1\r\n")
    assert "authorization: bearer k\r\n" in server.heads[0].lower()
    await client.aclose()


@pytest.mark.parametrize(
    ("reply", "reused"),
    [
        (answer(SSE), True),
        (answer(SSE, "Connection: close"), False),
        (answer(SSE, framing="close"), False),  # no length, not chunked: the body ends with the connection
        (answer(SSE, framing="length"), True),
        (answer(gzip.compress(SSE), "Content-Encoding: gzip"), True),
        (b"HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n" + answer(SSE), True),
    ],
)
async def test_each_framing_gives_the_same_answer_and_a_kept_connection_serves_the_next_call(
    serve, reply, reused
):
    server, url = await serve([reply, answer(SSE)])
    client = chat_client(url)
    assert await text(client) == "Hi"
    assert await text(client) == "Hi"
    assert server.connections == (1 if reused else 2)
    await client.aclose()


async def test_a_pooled_connection_the_server_closed_is_not_used_and_nothing_is_sent_twice(serve):
    server, url = await serve([answer(SSE), answer(SSE)])
    client = chat_client(url)
    await text(client)
    server.writers[0].close()  # the server's keep-alive ran out while the connection was idle
    await asyncio.sleep(0.05)
    assert await text(client) == "Hi"
    assert (server.connections, len(server.heads)) == (2, 2)
    await client.aclose()


async def test_a_request_reset_on_a_pooled_connection_is_not_sent_again_by_the_transport(serve):
    server, url = await serve([answer(SSE), reset, answer(SSE)])
    client = chat_client(url, retries=0)
    await text(client)
    with pytest.raises(ProviderStreamError, match="connection failed"):
        await text(client)  # it may have reached the server: only the retry policy may send it again
    assert len(server.heads) == 2
    await client.aclose()


@pytest.mark.parametrize(
    "reply",
    [
        b"SSH-2.0-OpenSSH_9.6\r\n\r\n",  # not HTTP
        answer(SSE)[:-45],  # closed inside a chunked body, before its first event ends
        answer(b"not gzip", "Content-Encoding: gzip"),  # a body that does not decode
    ],
)
async def test_a_broken_answer_is_a_connection_failure_worth_a_retry(serve, reply):
    server, url = await serve([lambda writer: (writer.write(reply), writer.close()), answer(SSE)])
    client = chat_client(url, retries=1)
    assert await text(client) == "Hi"
    assert len(server.heads) == 2
    await client.aclose()


async def test_a_refused_connection_is_a_connection_failure(serve):
    _, url = await serve([])
    port = url.split(":")[2].split("/")[0]
    client = chat_client(url.replace(port, "9"), retries=1)  # discard: nothing listens there
    with pytest.raises(ProviderStreamError, match=r"connection failed \(ConnectError\)"):
        await text(client)


async def test_tls_is_verified_against_the_shared_context(serve, tmp_path: Path, monkeypatch):
    cert, key = self_signed(tmp_path)
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(cert, key)
    server, url = await serve([answer(SSE)], context=server_context)
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    tls.context.cache_clear()
    with pytest.raises(ProviderStreamError, match=r"connection failed \(ConnectError\)"):
        await text(chat_client(url))  # the shared context (certifi's bundle) does not trust it
    assert server.heads == []
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    tls.context.cache_clear()
    try:
        client = chat_client(url)
        assert await text(client) == "Hi"
        await client.aclose()
    finally:
        tls.context.cache_clear()


async def test_with_a_proxy_in_the_environment_the_request_goes_through_it(serve, monkeypatch):
    proxy, proxy_url = await serve([answer(SSE)])
    monkeypatch.setenv("HTTP_PROXY", proxy_url.rsplit("/v1", 1)[0])
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    client = chat_client("http://model.invalid/v1")
    assert await text(client) == "Hi"
    assert proxy.heads[0].startswith("POST http://model.invalid/v1/chat/completions HTTP/1.1")
    await client.aclose()


@pytest.mark.parametrize("api_key", ["sk-1\r\nX-Injected: yes", "sk-1\n"])
def test_a_key_with_a_line_break_is_a_configuration_error(api_key):
    with pytest.raises(ConfigError, match="line break"):
        chat_client("http://model.invalid/v1", api_key=api_key)
