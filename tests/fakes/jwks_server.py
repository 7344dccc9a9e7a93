"""A JWKS endpoint on 127.0.0.1 for the JWT tests: real HTTP, keys the test controls."""

from __future__ import annotations

import json
import ssl
from collections.abc import Iterator
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.fakes.json_http import JsonHttpServer


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
    """The issuer's key set at /.well-known/jwks.json (over TLS with `ssl_context`); `requests` counts fetches."""

    PATH = "/.well-known/jwks.json"

    def __init__(self, ssl_context: ssl.SSLContext | None = None) -> None:
        self.keys: list[SigningKey] = []
        self._http = JsonHttpServer(self._respond, ssl_context)
        self.url = self._http.url + self.PATH

    def _respond(self, path: str) -> tuple[int, Any]:
        return (200 if path == self.PATH else 404), {"keys": [k.jwk() for k in self.keys]}

    @property
    def requests(self) -> int:
        return len(self._http.requests)

    def __enter__(self) -> JwksServer:
        self._http.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.__exit__(*exc)


@pytest.fixture
def jwks() -> Iterator[JwksServer]:
    """A JWKS server for one test, with one signing key, `key-1`."""
    with JwksServer() as server:
        server.keys.append(SigningKey("key-1"))
        yield server
