"""The connection pool of Chroma's and AWS's clients against a real HTTP/1.1 server on loopback: keep-alive, one connection per
request in flight, a kept connection the server closed, timeouts, refusals and TLS."""

from __future__ import annotations

import http.server
import json
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from devserver.stack import free_port
from rag_orchestrator import http_pool
from rag_orchestrator.http_pool import ConnectionPool, Request, Timeout, WireTimeout, WireUnreachable
from tests.fakes.certs import self_signed

HEADERS = {"Content-Type": "application/json", "User-Agent": "wire-test", "x-chroma-token": "t0ken"}
QUICK = Timeout(connect=1.0, read=1.0)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as Chroma's server
    seen: ClassVar[list[dict]] = []  # one per request: its connection (client port), path, headers, body
    script: ClassVar[dict[str, str]] = {}  # path -> "sleep", "close" (close after answering), "drop", "bye"

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.seen.append(
            {"port": self.client_address[1], "path": self.path, "headers": dict(self.headers), "body": body}
        )
        action = self.script.get(self.path.rsplit("/", 1)[-1], "")
        if action == "drop":  # the connection ends without an answer
            self.close_connection = True
            return
        if action == "sleep":
            time.sleep(0.6)
        answer = json.dumps({"path": self.path, "echo": body.decode()}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        if action == "bye":
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(answer)
        if action in ("close", "bye"):  # "close": closed behind the client's back, as an idle timeout does
            self.close_connection = True

    do_GET = do_POST

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[http.server.ThreadingHTTPServer]:
    Handler.seen, Handler.script = [], {}
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def pool_of(httpd: http.server.ThreadingHTTPServer, context: ssl.SSLContext | None = None) -> ConnectionPool:
    return ConnectionPool("127.0.0.1", httpd.server_address[1], "/api/v2", HEADERS, context)


def connections() -> set[int]:
    return {request["port"] for request in Handler.seen}


def test_requests_share_one_kept_connection_with_the_clients_headers(server):
    pool = pool_of(server)
    answers = [pool.send(Request("POST", f"/q{i}", b'{"n":1}', QUICK)) for i in range(5)]
    assert [answer.status for answer in answers] == [200] * 5
    assert answers[3].headers["content-type"] == "application/json"
    assert json.loads(answers[3].body) == {"path": "/api/v2/q3", "echo": '{"n":1}'}
    assert len(connections()) == 1
    sent = Handler.seen[0]["headers"]
    assert {k: sent[k] for k in HEADERS} == HEADERS and sent["Content-Length"] == "7"
    assert pool.send(Request("GET", "/count", None, QUICK)).status == 200 and len(connections()) == 1
    pool.close()


def test_a_requests_own_headers_go_on_top_of_the_pools(server):
    pool = pool_of(server)
    pool.send(Request("POST", "/signed", b"{}", QUICK, {"Authorization": "AWS4 x", "User-Agent": "mine"}))
    pool.send(Request("POST", "/plain", b"{}", QUICK))
    signed, plain = (request["headers"] for request in Handler.seen)
    assert signed["Authorization"] == "AWS4 x" and signed["User-Agent"] == "mine"
    assert "Authorization" not in plain and plain["User-Agent"] == "wire-test"


def test_requests_in_flight_at_once_each_have_a_connection_then_reuse_them(server):
    Handler.script = {"slow": "sleep"}
    pool = pool_of(server)
    threads = [
        threading.Thread(target=pool.send, args=(Request("POST", "/slow", b"{}", QUICK),)) for _ in range(3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(Handler.seen) == 3 and len(connections()) == 3
    for _ in range(3):
        pool.send(Request("POST", "/fast", b"{}", QUICK))
    assert len(connections()) == 3  # the three kept ones, no new one


def test_a_kept_connection_the_server_closed_is_replaced(server):
    Handler.script = {"first": "close"}
    pool = pool_of(server)
    pool.send(Request("POST", "/first", b"{}", QUICK))
    time.sleep(0.1)  # the server's FIN arrives: the kept connection reads EOF
    assert pool.send(Request("POST", "/second", b"{}", QUICK)).status == 200
    assert len(connections()) == 2


def test_a_kept_connection_that_breaks_as_it_is_reused_is_unreachable_and_nothing_is_sent_twice(
    server, monkeypatch
):
    Handler.script = {"first": "close"}
    pool = pool_of(server)
    pool.send(Request("POST", "/first", b"{}", QUICK))
    time.sleep(0.1)
    monkeypatch.setattr(http_pool, "_open", lambda connection: True)  # closed after the check
    with pytest.raises(WireUnreachable):
        pool.send(Request("POST", "/second", b"{}", QUICK))
    monkeypatch.undo()
    assert pool.send(Request("POST", "/third", b"{}", QUICK)).status == 200  # on a new connection
    assert [r["path"] for r in Handler.seen] == ["/api/v2/first", "/api/v2/third"]


def test_a_header_with_a_line_break_is_unreachable_and_not_sent(server):
    pool = ConnectionPool(
        "127.0.0.1", server.server_address[1], "/api/v2", {"x-chroma-token": "a\r\nX: 1"}, None
    )
    with pytest.raises(WireUnreachable):
        pool.send(Request("POST", "/q", b"{}", QUICK))
    assert Handler.seen == []


def test_a_connection_that_breaks_before_the_answer_is_unreachable_and_not_sent_again(server):
    Handler.script = {"broken": "drop"}
    with pytest.raises(WireUnreachable):
        pool_of(server).send(Request("POST", "/broken", b"{}", QUICK))
    assert len(Handler.seen) == 1


def test_an_answer_saying_close_is_not_kept(server):
    Handler.script = {"bye": "bye"}
    pool = pool_of(server)
    pool.send(Request("POST", "/bye", b"{}", QUICK))
    pool.send(Request("POST", "/next", b"{}", QUICK))
    assert len(connections()) == 2


def test_a_slow_answer_times_out_at_the_read_timeout_and_its_connection_is_dropped(server):
    Handler.script = {"slow": "sleep"}
    pool = pool_of(server)
    started = time.monotonic()
    with pytest.raises(WireTimeout) as caught:
        pool.send(Request("POST", "/slow", b"{}", Timeout(connect=1.0, read=0.2)))
    assert not caught.value.connect
    assert time.monotonic() - started < 0.55  # not the server's 0.6 s, and not sent twice
    assert pool.send(Request("POST", "/after", b"{}", QUICK)).status == 200
    assert len(connections()) == 2


def test_nothing_listening_is_unreachable():
    pool = ConnectionPool("127.0.0.1", free_port(), "/api/v2", HEADERS, None)
    with pytest.raises(WireUnreachable):
        pool.send(Request("POST", "/q", b"{}", QUICK))


def test_https_verifies_the_servers_certificate(server, tmp_path: Path):
    cert, key = self_signed(tmp_path)
    served = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    served.load_cert_chain(cert, key)
    server.socket = served.wrap_socket(server.socket, server_side=True)
    trusting = ssl.create_default_context(cafile=str(cert))
    pool = pool_of(server, trusting)
    assert [pool.send(Request("POST", "/q", b"{}", QUICK)).status for _ in range(2)] == [200, 200]
    assert len(connections()) == 1
    with pytest.raises(WireUnreachable):  # a certificate no CA of the default bundle signed
        pool_of(server, ssl.create_default_context()).send(Request("POST", "/q", b"{}", QUICK))
