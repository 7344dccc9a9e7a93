"""How Chroma's requests travel: keep-alive HTTP/1.1 connections of the standard library, pooled.

A search makes up to three requests to Chroma and a turn's memory one more write; httpx spends ~1.1 ms
more client CPU on a query than `http.client` does for the same request and answer (its request and
response models, httpcore's state machine): 1.8 ms against 0.7 ms on a slow core (bench/README.md).

`ConnectionPool` sends each request on an idle connection of its own (requests of one search run at
once, in worker threads), and sends it once: on a new connection when a kept one has been idle 40 s or
turns out closed by the server (a Chroma restart, a Lambda environment thawed). It bounds every phase:
the connect, and each read of the answer. Every failure is a `WireTimeout` or a `WireUnreachable`, as
httpx's are its `TimeoutException` and `TransportError`.

`HttpxWire` sends the same bytes through httpx: for a proxy from the environment (which httpx honours and
this pool does not) and for tests that script a transport.
"""

from __future__ import annotations

import http.client
import os
import select
import ssl
import threading
import time
from dataclasses import dataclass
from typing import Protocol

import httpx

KEEPALIVE_SECONDS = 40.0  # chromadb-client's default: a connection idle longer is closed, not reused
MAX_IDLE = 8  # connections kept for reuse; a search holds at most three at once
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


@dataclass(frozen=True, slots=True)
class Timeout:
    connect: float
    read: float  # each read of the answer, as httpx's


class WireTimeout(Exception):
    """Chroma did not connect or answer in time."""


class WireUnreachable(Exception):
    """No connection to Chroma, or it broke off mid-answer."""


class Wire(Protocol):
    def send(self, method: str, path: str, body: bytes | None, timeout: Timeout) -> tuple[int, bytes]:
        """Chroma's status and answer for `method path` (path from the API root, escaped) with `body`."""
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
        self, host: str, port: int, root: str, headers: dict[str, str], context: ssl.SSLContext | None
    ) -> None:
        self._host, self._port, self._root = host, port, root.rstrip("/")
        self._headers = headers
        self._context = context  # HTTPS when set
        self._idle: list[_Idle] = []
        self._lock = threading.Lock()

    def send(self, method: str, path: str, body: bytes | None, timeout: Timeout) -> tuple[int, bytes]:
        """Sent once, as httpx sends a request: a kept connection the server has closed is seen before the
        request is written, and not used."""
        return self._exchange(self._take(timeout), method, path, body, timeout)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for kept in idle:
            kept.connection.close()

    def _exchange(
        self,
        connection: http.client.HTTPConnection,
        method: str,
        path: str,
        body: bytes | None,
        timeout: Timeout,
    ) -> tuple[int, bytes]:
        try:
            sock = connection.sock
            if sock is not None:
                sock.settimeout(timeout.read)
            connection.request(method, self._root + path, body=body, headers=self._headers)
            response = connection.getresponse()
            answer = response.read()
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
        return response.status, answer

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
            raise WireTimeout(type(exc).__name__) from None
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

    def send(self, method: str, path: str, body: bytes | None, timeout: Timeout) -> tuple[int, bytes]:
        try:
            response = self._http.request(
                method, path, content=body, timeout=httpx.Timeout(timeout.read, connect=timeout.connect)
            )
        except httpx.TimeoutException as exc:
            raise WireTimeout(type(exc).__name__) from None
        except httpx.TransportError as exc:
            raise WireUnreachable(type(exc).__name__) from None
        return response.status_code, response.content

    def close(self) -> None:
        self._http.close()
