"""The moto server, answering one request at a time: `python -m devserver.moto_serial -H HOST -p PORT`.

moto's backends are not thread-safe and `moto_server` serves requests on threads. TransactWriteItems
deep-copies the table to roll back a failed transaction, so two transactions at once can restore a
copy taken before the other's write and lose it — something DynamoDB never does — and concurrent
tests then fail now and then under load. Here connections are still accepted concurrently, but
each request runs to its last byte under one lock, so every request is atomic, as in DynamoDB. Under
the same lock, expired items are deleted as DynamoDB's TTL deletes them, and moto is kept from growing
with every request (devserver/moto_dynamodb.py).
Browser-based uploads (POST Object) are checked against their signed policy first, as S3 checks
them (devserver/s3_post_policy.py); with `--notify URL`, uploads under attachments/ are announced
to URL as S3 events (devserver/s3_notifications.py).
"""

from __future__ import annotations

import argparse
import os
import threading
from collections.abc import Callable, Iterable
from typing import Any

from moto.core.model_instances import reset_model_data
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import run_simple

from devserver.moto_dynamodb import SWEEP_SECONDS, lighten, start_sweeper
from devserver.s3_notifications import notify_uploads
from devserver.s3_post_policy import enforce_post_policy

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def one_at_a_time(app: WsgiApp, lock: threading.Lock) -> WsgiApp:
    def serve(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        with lock:
            try:
                return list(app(environ, start_response))  # the whole body, inside the lock
            finally:
                reset_model_data()  # moto's dashboard lists would keep every object (moto_dynamodb.py)

    return serve


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m devserver.moto_serial", description=__doc__)
    parser.add_argument("-H", "--host", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, default=5000)
    parser.add_argument("--notify", help="URL that receives S3 events for uploads under attachments/")
    parser.add_argument(
        "--ttl-sweep-seconds", type=float, default=SWEEP_SECONDS, help="how often expired items are deleted"
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("MOTO_PORT", str(args.port))  # as moto_server does (URLs moto hands out)
    app = DomainDispatcherApplication(create_backend_app)
    checked = notify_uploads(
        enforce_post_policy(app, secret=os.environ.get("AWS_SECRET_ACCESS_KEY")), args.notify
    )
    lock = threading.Lock()
    lighten()
    start_sweeper(lock, args.ttl_sweep_seconds)
    run_simple(
        args.host, args.port, one_at_a_time(checked, lock), threaded=True, request_handler=MotoRequestHandler
    )


if __name__ == "__main__":
    main()
