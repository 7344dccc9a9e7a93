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
from collections.abc import Callable, Iterator
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
    script: str,
    *args: str,
    timeout: float = 120,
    env: dict[str, str] | None = None,
    on_line: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Run a client under tests/node (`env` added to its environment) and return the JSON it prints
    last; `on_line` is called with each JSON line before it, as it comes (a client telling the test it
    reached a point)."""
    if not (NODE_DIR / "node_modules").is_dir():
        raise RuntimeError("tests/node has no node_modules: run `make test` (devserver/bootstrap.sh node)")
    with subprocess.Popen(
        ["node", str(NODE_DIR / script), *args],
        cwd=NODE_DIR,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    ) as process:
        timer = threading.Timer(timeout, process.kill)
        timer.start()
        try:
            assert process.stdout is not None and process.stderr is not None
            lines = []
            for line in process.stdout:
                lines.append(line)
                if on_line is not None and line.startswith("{"):
                    on_line(json.loads(line))
            errors = process.stderr.read()
            returncode = process.wait()
        finally:
            timer.cancel()
    out = "".join(lines)
    assert returncode == 0, f"{script} failed ({returncode}):\n{out}\n{errors}"
    return json.loads(out.strip().splitlines()[-1])
