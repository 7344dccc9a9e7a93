"""One TLS context per process for every httpx client and every pool of `http_pool`.

httpx builds a new SSLContext, loading the whole CA bundle, for each client it creates: 40–90 ms of
a cold start per client, even for one that only ever speaks plain HTTP. A chat turn may create four
(JWKS, model, embedder; Chroma and AWS on `http_pool`). An SSLContext is safe to share between clients
and threads.
"""

from __future__ import annotations

import ssl
from functools import lru_cache

import httpx


@lru_cache(maxsize=1)
def context() -> ssl.SSLContext:
    """httpx's own default (certifi's bundle, or SSL_CERT_FILE / SSL_CERT_DIR), made once."""
    return httpx.create_ssl_context()


def verify(url: str | httpx.URL) -> ssl.SSLContext | bool:
    """httpx's `verify=` for a client of `url`: the shared context, or nothing to verify over plain HTTP.

    (A plain-HTTP client sent through an HTTPS proxy from the environment would not verify that proxy.)
    """
    return context() if str(url).lower().startswith("https:") else False
