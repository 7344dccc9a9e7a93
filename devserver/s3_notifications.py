"""S3 event notifications for the local stack: what S3 does for template.yaml's AttachmentFunction.

The moto server sends no notifications, so under `make dev` an upload would stay PENDING_UPLOAD until
a turn needed it. Here a successful upload under `attachments/` (a POST Object or a PUT) is followed
by an `ObjectCreated` event POSTed to the dev app, which processes it as AttachmentFunction would.
"""

from __future__ import annotations

import io
import json
import sys
import threading
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote_plus
from urllib.request import Request, urlopen

from werkzeug.formparser import parse_form_data

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
PREFIX = "attachments/"


def created_object(environ: dict[str, Any]) -> tuple[str, str, str] | None:
    """(bucket, key, event name) of an upload request, or None for any other request."""
    method, path = environ.get("REQUEST_METHOD"), environ.get("PATH_INFO", "/").lstrip("/")
    bucket, _, key = path.partition("/")
    if method == "PUT" and key and not environ.get("QUERY_STRING"):
        return bucket, key, "ObjectCreated:Put"
    if method == "POST" and not key and environ.get("CONTENT_TYPE", "").startswith("multipart/form-data"):
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        environ["wsgi.input"] = io.BytesIO(body)
        _, form, _ = parse_form_data(environ)
        environ["wsgi.input"] = io.BytesIO(body)
        return (bucket, form["key"], "ObjectCreated:Post") if "key" in form else None
    return None


def s3_event(bucket: str, key: str, name: str) -> dict[str, Any]:
    return {
        "Records": [
            {
                "eventVersion": "2.1",
                "eventSource": "aws:s3",
                "awsRegion": "us-east-1",
                "eventTime": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
                "eventName": name,
                "s3": {"bucket": {"name": bucket}, "object": {"key": quote_plus(key)}},
            }
        ]
    }


def _send(url: str, event: dict[str, Any]) -> None:
    request = Request(url, json.dumps(event).encode(), {"Content-Type": "application/json"})
    try:
        with urlopen(request, timeout=10):
            pass
    except OSError as exc:
        print(f"s3 notification to {url} failed: {exc}", file=sys.stderr)


def notify_uploads(app: WsgiApp, url: str | None) -> WsgiApp:
    """`app` that, after each successful upload under attachments/, sends the S3 event to `url`."""
    if not url:
        return app

    def serve(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        created = created_object(environ)
        status: list[str] = []

        def record(code: str, headers: list, *args: Any) -> Any:
            status.append(code)
            return start_response(code, headers, *args)

        body = list(app(environ, record))
        if created and created[1].startswith(PREFIX) and status and status[0].startswith("2"):
            threading.Thread(target=_send, args=(url, s3_event(*created)), daemon=True).start()
        return body

    return serve
