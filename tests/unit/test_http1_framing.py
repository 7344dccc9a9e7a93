"""The model client's HTTP/1.1 framing: chunked bodies however the reads split them, and heads."""

from __future__ import annotations

import pytest

from rag_orchestrator.providers.http1 import ChunkedBody, HTTPFailure, _parse_head
from rag_orchestrator.providers.transport import proxied

FIRST = b'data: {"a": "first"}\n\n\r\n'  # a CR LF inside the data, too
WIRE = b"%x\r\n%s\r\n" % (len(FIRST), FIRST) + b"5;name=value\r\nhello\r\n" + b"0\r\nX-Trailer: yes\r\n\r\n"
BODY = FIRST + b"hello"


def test_one_whole_chunk_per_read_is_its_data():
    body = ChunkedBody()
    assert body.feed(b"6\r\nabc\r\nd\r\n") == b"abc\r\nd"
    assert body.feed(b"0\r\n\r\n") == b"" and body.done and not body.extra


@pytest.mark.parametrize("size", [1, 2, 3, 7])
def test_a_body_split_anywhere_gives_the_same_data(size):
    for offset in range(size):
        body, out = ChunkedBody(), []
        pieces = [WIRE[:offset], *(WIRE[i : i + size] for i in range(offset, len(WIRE), size))]
        for piece in pieces:
            if piece:
                out.append(body.feed(piece))
        assert b"".join(out) == BODY and body.done and not body.extra


def test_bytes_after_the_last_chunk_mark_the_connection_unusable():
    body = ChunkedBody()
    assert body.feed(b"2\r\nok\r\n0\r\n\r\nHTTP/1.1 200") == b"ok"
    assert body.done and body.extra


@pytest.mark.parametrize("wire", [b"zz\r\nok\r\n", b"2\r\nokXX", b"-2\r\nok\r\n", b"9" * 5000])
def test_a_broken_chunk_is_an_http_failure(wire):
    with pytest.raises(HTTPFailure):
        ChunkedBody().feed(wire)


def test_a_head_gives_its_status_and_lower_case_headers():
    status, headers = _parse_head(b"HTTP/1.1 429 Too Many\r\nRetry-After: 3\r\nX-A:  b \r\n\r\n")
    assert status == 429 and headers == {"retry-after": "3", "x-a": "b"}


def test_an_http_1_0_answer_closes_its_connection_unless_kept_alive():
    assert _parse_head(b"HTTP/1.0 200 OK\r\n\r\n")[1]["connection"] == "close"
    assert _parse_head(b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\n")[1]["connection"] == "keep-alive"


@pytest.mark.parametrize(
    "head", [b"SSH-2.0-OpenSSH\r\n\r\n", b"HTTP/2 200\r\n\r\n", b"HTTP/1.1 200 OK\r\nbad\r\n\r\n"]
)
def test_what_is_not_an_http_1_head_is_an_http_failure(head):
    with pytest.raises(HTTPFailure):
        _parse_head(head)


def test_the_environment_proxies_a_url_unless_no_proxy_names_its_host(monkeypatch):
    for name in (
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "NO_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "no_proxy",
    ):
        monkeypatch.delenv(name, raising=False)
    assert not proxied("https://api.deepseek.com/v1/chat/completions")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    assert proxied("https://api.deepseek.com/v1/chat/completions")
    assert not proxied("http://127.0.0.1:8000/v1/chat/completions")  # https only
    monkeypatch.setenv("NO_PROXY", "deepseek.com")
    assert not proxied("https://api.deepseek.com/v1/chat/completions")
