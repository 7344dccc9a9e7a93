"""A JWKS endpoint on 127.0.0.1 for the JWT tests: real HTTP, keys the test controls."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa


class SigningKey:
    """An RSA key pair and its kid: signs tokens, publishes its public half as a JWK."""

    def __init__(self, kid: str) -> None:
        self.kid = kid
        self.private = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def jwk(self) -> dict[str, Any]:
        public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.private.public_key()))
        return public | {"kid": self.kid, "alg": "RS256", "use": "sig"}

    def sign(self, claims: dict[str, Any], **headers: Any) -> str:
        return jwt.encode(claims, self.private, algorithm="RS256", headers={"kid": self.kid, **headers})


class JwksServer:
    def __init__(self) -> None:
        self.keys: list[SigningKey] = []
        self.requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.requests += 1
                body = json.dumps({"keys": [k.jwk() for k in server.keys]}).encode()
                self.send_response(200 if self.path == "/.well-known/jwks.json" else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/.well-known/jwks.json"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> JwksServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
