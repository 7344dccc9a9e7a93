"""AWS Signature Version 4 for a request with its body in hand (docs/performance.md, "Requests without boto3").

The steps of AWS's specification: the canonical request (method, path, sorted query, the signed
headers lower-cased and trimmed, the body's SHA-256), the string to sign over the date's credential
scope, the signing key derived from the secret, date, region and service (kept for the day), and the
`Authorization` header. botocore's SigV4Auth signs the same request to the same bytes
(tests/unit/test_aws_sigv4.py), and S3SigV4Auth an S3 request given its `X-Amz-Content-SHA256`.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import quote, urlsplit

ALGORITHM = "AWS4-HMAC-SHA256"


@dataclass(frozen=True)
class Credentials:
    access_key: str
    secret_key: str
    token: str | None = None


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


class Signer:
    """Signs requests for one service in one region with one set of credentials."""

    def __init__(self, credentials: Credentials, region: str, service: str) -> None:
        self.credentials = credentials
        self.region = region
        self.service = service
        # The path is signed escaped once more than it is sent, but S3 signs it as sent (escaped once).
        self._escapes_path = service != "s3"
        self._keys: dict[str, bytes] = {}  # the day's signing key, by date

    def headers(
        self, method: str, url: str, headers: dict[str, str], body: bytes, now: datetime | None = None
    ) -> dict[str, str]:
        """`headers` with the host, date, security token and `Authorization` a signed request carries."""
        moment = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
        parts = urlsplit(url)
        if parts.query:
            raise ValueError("a query string is not signed here: the JSON protocol sends none")
        signed = {key.lower(): " ".join(str(value).split()) for key, value in headers.items()}
        signed["host"] = host(url)
        signed["x-amz-date"] = moment
        if self.credentials.token:
            signed["x-amz-security-token"] = self.credentials.token
        names = sorted(signed)
        canonical = "\n".join(
            [
                method.upper(),
                quote(parts.path or "/", safe="/~") if self._escapes_path else parts.path or "/",
                "",  # the query
                "".join(f"{name}:{signed[name]}\n" for name in names),
                ";".join(names),
                hashlib.sha256(body).hexdigest(),
            ]
        )
        day = moment[:8]
        scope = f"{day}/{self.region}/{self.service}/aws4_request"
        to_sign = f"{ALGORITHM}\n{moment}\n{scope}\n{hashlib.sha256(canonical.encode()).hexdigest()}"
        signature = hmac.new(self._key(day), to_sign.encode(), hashlib.sha256).hexdigest()
        authorization = (
            f"{ALGORITHM} Credential={self.credentials.access_key}/{scope}, "
            f"SignedHeaders={';'.join(names)}, Signature={signature}"
        )
        sent = {**headers, "Host": signed["host"], "X-Amz-Date": moment, "Authorization": authorization}
        if self.credentials.token:
            sent["X-Amz-Security-Token"] = self.credentials.token
        return sent

    def _key(self, day: str) -> bytes:
        key = self._keys.get(day)
        if key is None:
            key = _hmac(("AWS4" + self.credentials.secret_key).encode(), day)
            for part in (self.region, self.service, "aws4_request"):
                key = _hmac(key, part)
            self._keys = {day: key}
        return key


def host(url: str) -> str:
    """The Host a request to `url` carries: its port only when not the scheme's own (as botocore)."""
    parts = urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme)
    name = parts.hostname or ""
    shown = f"[{name}]" if ":" in name else name
    return shown if parts.port in (None, default) else f"{shown}:{parts.port}"
