"""An MCP server built with the official TypeScript SDK (tests/node/mcp_server.mjs), run by node on loopback:
the order service of fake_mcp.py in the other SDK's transport, stateful or stateless, answering in event
streams or JSON. It logs each request it receives, as FakeMcp does:

    with NodeMcp(stateful=True, json=False) as server:
        ...
        assert server.calls("lookup_order")[0]["headers"]["x-caller-assertion"]
"""

from __future__ import annotations

import json
import subprocess
import threading
from typing import Any

from devserver.stack import ROOT, free_port

NODE_DIR = ROOT / "tests" / "node"


class NodeMcp:
    def __init__(self, *, stateful: bool, json: bool) -> None:
        self.stateful = stateful
        self.json = json
        self.port = free_port()
        self.log: list[dict[str, Any]] = []
        self._process: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.base}/mcp"

    def calls(self, tool: str) -> list[dict[str, Any]]:
        return [entry for entry in self.log if entry.get("tool") == tool]

    def __enter__(self) -> NodeMcp:
        if not (NODE_DIR / "node_modules" / "@modelcontextprotocol").is_dir():
            raise RuntimeError("tests/node has no MCP SDK: run `make test` (devserver/bootstrap.sh node)")
        mode, answers = ("stateful" if self.stateful else "stateless"), ("json" if self.json else "events")
        self._process = subprocess.Popen(
            ["node", str(NODE_DIR / "mcp_server.mjs"), str(self.port), mode, answers],
            cwd=NODE_DIR,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self._process.stdout is not None
        first = self._process.stdout.readline()  # {"listening": port}, or nothing if node failed
        if json_line(first).get("listening") != self.port:
            self._process.kill()
            raise RuntimeError(f"the TypeScript MCP server did not start: {first!r}")
        self._reader = threading.Thread(target=self._read, name="node-mcp-log", daemon=True)
        self._reader.start()
        return self

    def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            if line.startswith("{"):
                self.log.append(json_line(line))

    def __exit__(self, *exc: object) -> None:
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        if self._reader is not None:
            self._reader.join(5)


def json_line(line: str) -> dict[str, Any]:
    try:
        found = json.loads(line)
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}
