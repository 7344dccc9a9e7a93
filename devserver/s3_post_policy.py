"""What S3 checks on a browser-based upload (POST Object) and moto does not: the signed POST policy.

moto stores whatever a multipart POST sends (getmoto/moto#7837). S3 refuses the upload unless the
policy is signed with the caller's key, unexpired, and every form field and the file size satisfy
its conditions. The local moto server checks the same, so the presigned POSTs the service hands out
are tested as S3 would take them: a too-large file gets 400 EntityTooLarge, a changed key or
Content-Type 403 AccessDenied, a forged policy 403 SignatureDoesNotMatch.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import io
import json
import time
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any
from xml.sax.saxutils import escape

from werkzeug.formparser import parse_form_data

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
# Fields a policy need not name (S3's documented exceptions).
UNCHECKED = {"file", "policy", "x-amz-signature", "signature", "awsaccesskeyid"}


class Refused(Exception):
    def __init__(self, status: str, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.extra = status, code, message, extra

    def xml(self) -> bytes:
        extra = "".join(f"<{k}>{escape(str(v))}</{k}>" for k, v in self.extra.items())
        body = f"<Error><Code>{self.code}</Code><Message>{escape(self.message)}</Message>{extra}</Error>"
        return ('<?xml version="1.0" encoding="UTF-8"?>\n' + body).encode()


def _denied(message: str) -> Refused:
    return Refused("403 Forbidden", "AccessDenied", f"Invalid according to Policy: {message}")


def signing_key(secret: str, date: str, region: str, service: str) -> bytes:
    key = f"AWS4{secret}".encode()
    for part in (date, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return key


def check_upload(bucket: str, fields: dict[str, str], size: int, secret: str | None, now: float) -> None:
    """Raise Refused as S3 would for this POST upload (fields lower-cased, file size in bytes)."""
    try:
        policy = json.loads(base64.b64decode(fields["policy"]))
        expires = datetime.fromisoformat(policy["expiration"].replace("Z", "+00:00")).timestamp()
        conditions = policy["conditions"]
    except (KeyError, ValueError, TypeError):
        raise Refused("400 Bad Request", "InvalidPolicyDocument", "Invalid Policy: Invalid JSON.") from None
    if secret is not None:
        _check_signature(fields, secret)
    if expires < now:
        raise _denied("Policy expired.")
    values = {**fields, "bucket": bucket}
    covered = set()
    for condition in conditions:
        if isinstance(condition, dict):
            ((name, expected),) = condition.items()
            condition = ["eq", f"${name}", expected]
        operator, *args = condition
        if operator == "content-length-range":
            low, high = int(args[0]), int(args[1])
            if size > high:
                raise Refused(
                    "400 Bad Request",
                    "EntityTooLarge",
                    "Your proposed upload exceeds the maximum allowed size",
                    ProposedSize=size,
                    MaxSizeAllowed=high,
                )
            if size < low:
                raise Refused(
                    "400 Bad Request",
                    "EntityTooSmall",
                    "Your proposed upload is smaller than the minimum allowed size",
                    ProposedSize=size,
                    MinSizeAllowed=low,
                )
            continue
        name, expected = args[0].lstrip("$").lower(), str(args[1])
        covered.add(name)
        actual = values.get(name, "")
        matched = actual == expected if operator == "eq" else actual.startswith(expected)
        if not matched:
            raise _denied(f"Policy Condition failed: {json.dumps(condition)}")
    extra = sorted(n for n in fields if n not in covered | UNCHECKED and not n.startswith("x-ignore-"))
    if extra:
        raise _denied(f"Extra input fields: {', '.join(extra)}")


def _check_signature(fields: dict[str, str], secret: str) -> None:
    try:
        _, date, region, service, _ = fields["x-amz-credential"].split("/")
        given = fields["x-amz-signature"]
    except (KeyError, ValueError):
        raise _denied("Policy Condition failed: missing x-amz-credential or x-amz-signature") from None
    key = signing_key(secret, date, region, service)
    wanted = hmac.new(key, fields["policy"].encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(wanted, given):
        raise Refused(
            "403 Forbidden",
            "SignatureDoesNotMatch",
            "The request signature we calculated does not match the signature you provided.",
        )


def enforce_post_policy(app: WsgiApp, secret: str | None, clock: Callable[[], float] = time.time) -> WsgiApp:
    """`app` behind S3's POST policy checks, for multipart POSTs carrying a policy to a bucket."""

    def serve(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD") != "POST" or not environ.get("CONTENT_TYPE", "").startswith(
            "multipart/form-data"
        ):
            return app(environ, start_response)
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        environ["wsgi.input"] = io.BytesIO(body)
        _, form, files = parse_form_data(environ)
        environ["wsgi.input"] = io.BytesIO(body)  # moto reads the body again
        fields = {name.lower(): value for name, value in form.items()}
        bucket = environ.get("PATH_INFO", "/").strip("/").split("/", 1)[0]
        if "policy" not in fields or not bucket:
            return app(environ, start_response)
        upload = files.get("file")
        size = len(upload.read()) if upload is not None else 0
        try:
            check_upload(bucket, fields, size, secret, clock())
        except Refused as refused:
            start_response(refused.status, [("Content-Type", "application/xml")])
            return [refused.xml()]
        return app(environ, start_response)

    return serve
