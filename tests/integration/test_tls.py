"""One shared TLS context: HTTPS is still verified (against SSL_CERT_FILE when set), plain HTTP needs none."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import httpx
import pytest

from rag_orchestrator import tls
from rag_orchestrator.api.jwt_verifier import JwksCache
from rag_orchestrator.errors import Unauthorized


def _self_signed(directory: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path


class _Keys(BaseHTTPRequestHandler):
    served: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.served.append(self.path)
        body = b'{"keys": []}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def https_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    cert, key = _self_signed(tmp_path)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Keys)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Keys.served = []
    yield f"https://127.0.0.1:{server.server_port}/jwks.json", cert
    server.shutdown()


@pytest.fixture(autouse=True)
def fresh_context() -> Iterator[None]:
    tls.context.cache_clear()
    yield
    tls.context.cache_clear()


def test_plain_http_needs_no_context_and_https_shares_one():
    assert tls.verify("http://127.0.0.1:8001") is False
    assert tls.verify("https://chroma.example.com") is tls.verify(httpx.URL("HTTPS://api.deepseek.com"))
    assert tls.context().verify_mode == ssl.CERT_REQUIRED and tls.context().check_hostname


def test_an_untrusted_certificate_is_refused(https_server, monkeypatch):
    url, _ = https_server
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    with pytest.raises(Unauthorized, match="signing keys are unavailable"):
        JwksCache(url).key("any")
    assert _Keys.served == []  # the handshake failed: no request was made


def test_ssl_cert_file_is_honoured_like_httpx_does(https_server, monkeypatch):
    url, cert = https_server
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    with pytest.raises(Unauthorized):  # an empty key set, fetched over verified TLS
        JwksCache(url).key("any")
    assert _Keys.served == ["/jwks.json"]
