"""The dev app served for real clients: uvicorn on a loopback port in a thread, and the node clients.

with serve_dev_app(port) as base:       # http://127.0.0.1:<port>
    run_node("ui_stream_client.mjs", url, "alice", "hi")
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from devserver.stack import ROOT

NODE_DIR = ROOT / "tests" / "node"


@contextmanager
def serve_dev_app(port: int) -> Iterator[str]:
    """The dev server's app (routers, chat page, demo tools) built from the current environment."""
    from devserver.app import build_app

    config = uvicorn.Config(build_app(), host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="served-app", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the app did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def run_node(
    script: str, *args: str, timeout: float = 120, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """Run a client under tests/node (`env` added to its environment) and return the JSON it prints last."""
    if not (NODE_DIR / "node_modules").is_dir():
        raise RuntimeError("tests/node has no node_modules: run `make test` (devserver/bootstrap.sh node)")
    done = subprocess.run(
        ["node", str(NODE_DIR / script), *args],
        cwd=NODE_DIR,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
    assert done.returncode == 0, f"{script} failed:\n{done.stdout}\n{done.stderr}"
    return json.loads(done.stdout.strip().splitlines()[-1])
