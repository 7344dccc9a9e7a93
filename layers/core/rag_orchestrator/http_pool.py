"""Requests to Chroma, to AWS without boto3 (DynamoDB, SSM, Secrets Manager, Bedrock Runtime) and to an
OpenAI-compatible embedder: keep-alive HTTP/1.1 connections of the standard library, pooled.

A turn makes three or four Chroma requests with the defaults and three DynamoDB requests (more for a
streamed turn's event log). httpx spends ~1 ms more client CPU on each than `http.client` does for the
same request and answer (its request and response models, httpcore's state machine): a Chroma query
2.15 ms against 1.03 ms, a DynamoDB GetItem 1.5 ms against 0.65 ms on a slow core (bench/README.md).

`ConnectionPool` sends each request on an idle connection of its own (requests of one search run at
once, in worker threads), and sends it once: on a new connection when a kept one has been idle 40 s or
turns out closed by the server (a restart, a Lambda environment thawed). It bounds every phase: the
connect, and each read of the answer. Every failure is a `WireTimeout` or a `WireUnreachable`, as
httpx's are its `TimeoutException` and `TransportError`; whether to send again is the caller's (the AWS
client retries as botocore does, Chroma's client does not).

`HttpxWire` sends the same bytes through httpx: for a proxy named in the environment (which httpx
honours and this pool does not) and for tests that script a transport.
"""

from __future__ import annotations

import http.client
import os
import select
import ssl
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import httpx

from rag_orchestrator import tls

KEEPALIVE_SECONDS = 40.0  # chromadb-client's default: a connection idle longer is closed, not reused
MAX_IDLE = 32  # connections kept for reuse (the archival job runs up to 32 workers)
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


@dataclass(frozen=True, slots=True)
class Timeout:
    connect: float
    read: float  # each read of the answer, as httpx's


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str  # escaped, under the wire's root
    body: bytes | None
    timeout: Timeout
    headers: Mapping[str, str] | None = None  # on top of the wire's own


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    body: bytes
    headers: dict[str, str]  # names in lower case


class WireTimeout(Exception):
    """The server did not connect (`connect`) or answer in time."""

    def __init__(self, kind: str, *, connect: bool = False) -> None:
        super().__init__(kind)
        self.connect = connect


class WireUnreachable(Exception):
    """No connection to the server, or it broke off mid-answer."""


class Wire(Protocol):
    def send(self, request: Request) -> Answer:
        """The server's answer to `request`."""
        ...

    def close(self) -> None: ...


def proxied() -> bool:
    """Whether the environment names a proxy: then requests go through httpx, which applies it (and
    NO_PROXY) as it always has."""
    return any(os.environ.get(name) for name in PROXY_VARIABLES)


@dataclass(slots=True)
class _Idle:
    connection: http.client.HTTPConnection
    since: float  # time.monotonic() when it was put back


class ConnectionPool:
    """One server's keep-alive connections; thread-safe, each request on a connection no other holds."""

    def __init__(
        self,
        host: str,
        port: int,
        root: str,
        headers: Mapping[str, str],
        context: ssl.SSLContext | None,
    ) -> None:
        self._host, self._port, self._root = host, port, root.rstrip("/")
        self._headers = dict(headers)
        self._context = context  # HTTPS when set
        self._idle: list[_Idle] = []
        self._lock = threading.Lock()

    def send(self, request: Request) -> Answer:
        """Sent once, as httpx sends a request: a kept connection the server has closed is seen before the
        request is written, and not used."""
        return self._exchange(self._take(request.timeout), request)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for kept in idle:
            kept.connection.close()

    def _exchange(self, connection: http.client.HTTPConnection, request: Request) -> Answer:
        headers = {**self._headers, **request.headers} if request.headers else self._headers
        try:
            sock = connection.sock
            if sock is not None:
                sock.settimeout(request.timeout.read)
            connection.request(request.method, self._root + request.path, body=request.body, headers=headers)
            response = connection.getresponse()
            answer = Answer(
                response.status, response.read(), {k.lower(): v for k, v in response.getheaders()}
            )
        except TimeoutError as exc:
            connection.close()
            raise WireTimeout(type(exc).__name__) from None
        except (OSError, http.client.HTTPException, ValueError) as exc:  # ValueError: a header's CR or LF
            connection.close()
            raise WireUnreachable(type(exc).__name__) from None
        if response.will_close:
            connection.close()
        else:
            self._give(connection)
        return answer

    def _take(self, timeout: Timeout) -> http.client.HTTPConnection:
        """An idle connection still open, else a new one."""
        now = time.monotonic()
        while True:
            with self._lock:
                if not self._idle:
                    break
                kept = self._idle.pop()
            if now - kept.since < KEEPALIVE_SECONDS and _open(kept.connection):
                return kept.connection
            kept.connection.close()
        return self._connect(timeout)

    def _connect(self, timeout: Timeout) -> http.client.HTTPConnection:
        connection: http.client.HTTPConnection
        if self._context is not None:
            connection = http.client.HTTPSConnection(
                self._host, self._port, timeout=timeout.connect, context=self._context
            )
        else:
            connection = http.client.HTTPConnection(self._host, self._port, timeout=timeout.connect)
        try:
            connection.connect()
        except TimeoutError as exc:
            connection.close()
            raise WireTimeout(type(exc).__name__, connect=True) from None
        except OSError as exc:
            connection.close()
            raise WireUnreachable(type(exc).__name__) from None
        return connection

    def _give(self, connection: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < MAX_IDLE:
                self._idle.append(_Idle(connection, time.monotonic()))
                return
        connection.close()


def _open(connection: http.client.HTTPConnection) -> bool:
    """Whether an idle connection can carry a request: nothing to read on it (a closed one reads EOF)."""
    sock = connection.sock
    if sock is None:
        return False
    poller = select.poll()  # not select.select, which fails for a descriptor above 1,023
    poller.register(sock, select.POLLIN)
    try:
        return not poller.poll(0)
    except OSError:
        return False


class HttpxWire:
    """The same requests through an httpx client: its transport (a test's script) or the environment's
    proxy."""

    def __init__(self, client: httpx.Client) -> None:
        self._http = client

    def send(self, request: Request) -> Answer:
        try:
            response = self._http.request(
                request.method,
                request.path,
                content=request.body,
                headers=request.headers or None,
                timeout=httpx.Timeout(request.timeout.read, connect=request.timeout.connect),
            )
        except httpx.ConnectTimeout as exc:
            raise WireTimeout(type(exc).__name__, connect=True) from None
        except httpx.TimeoutException as exc:
            raise WireTimeout(type(exc).__name__) from None
        except httpx.TransportError as exc:
            raise WireUnreachable(type(exc).__name__) from None
        return Answer(response.status_code, response.content, dict(response.headers))

    def close(self) -> None:
        self._http.close()


def wire_for(
    url: str, root: str, headers: Mapping[str, str], transport: httpx.BaseTransport | None = None
) -> Wire:
    """A pool of connections to `url`'s host, or, with a transport or a proxy in the environment, httpx."""
    target = httpx.URL(url)
    https = target.scheme == "https"
    if transport is None and not proxied():
        context = tls.context() if https else None
        return ConnectionPool(target.host, target.port or (443 if https else 80), root, headers, context)
    base = target.copy_with(path=root or "/", query=None, fragment=None)
    client = httpx.Client(
        base_url=base,
        headers=dict(headers),
        limits=httpx.Limits(keepalive_expiry=KEEPALIVE_SECONDS),
        verify=tls.verify(base),
        transport=transport,
    )
    return HttpxWire(client)
