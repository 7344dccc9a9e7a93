"""One shared TLS context: HTTPS is still verified (against SSL_CERT_FILE when set), plain HTTP needs none."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from rag_orchestrator import tls
from rag_orchestrator.api.jwt_verifier import JwksCache
from rag_orchestrator.errors import IdentityUnavailable
from tests.fakes.certs import self_signed
from tests.fakes.jwks_server import JwksServer, SigningKey


@pytest.fixture
def https_jwks(tmp_path: Path) -> Iterator[tuple[JwksServer, SigningKey, Path]]:
    """A JWKS endpoint over TLS with a self-signed certificate that no CA bundle holds."""
    cert, key = self_signed(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    signing = SigningKey("tls-key")
    with JwksServer(context) as server:
        server.keys.append(signing)
        yield server, signing, cert


@pytest.fixture(autouse=True)
def fresh_context() -> Iterator[None]:
    tls.context.cache_clear()
    yield
    tls.context.cache_clear()


def test_plain_http_needs_no_context_and_https_shares_one():
    assert tls.verify("http://127.0.0.1:8001") is False
    assert tls.verify("https://chroma.example.com") is tls.verify(httpx.URL("HTTPS://api.deepseek.com"))
    assert tls.context().verify_mode == ssl.CERT_REQUIRED and tls.context().check_hostname


def test_an_untrusted_certificate_is_refused(https_jwks, monkeypatch):
    server, signing, _ = https_jwks
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    with pytest.raises(IdentityUnavailable, match="signing keys are unavailable"):
        JwksCache(server.url).key(signing.kid)
    assert server.requests == 0  # the handshake failed: no request was made


def test_ssl_cert_file_is_honoured_like_httpx_does(https_jwks, monkeypatch):
    server, signing, cert = https_jwks
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    assert JwksCache(server.url).key(signing.kid) is not None  # fetched over verified TLS
    assert server.requests == 1
