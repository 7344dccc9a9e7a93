"""What signing a caller assertion costs each HTTP tool call (docs/tools.md, identity).

1. `AssertionSigner.sign` alone: CPU (this thread's) per assertion, in rounds of 200 after a warm-up.
2. A whole HTTP tool call (`HttpTool.execute` against httpx's MockTransport: no network) with
   `identity: assertion` and with `identity: none`, alternating rounds: the process's CPU per call
   (the signing runs in a worker thread), and the difference.
3. A fresh interpreter with the HTTP tool module already imported (a toolbox loads it at start):
   the first assertion, the PEM key parsed — what the first tool call of a cold function pays once
   (the SSM read of the key aside): with PyJWT already loaded, as in jwt mode where the caller's token
   was verified first, and with nothing loaded.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

from bench.report import ROOT, Section

PER_ROUND = 200
FIRST_SIGN = """
import os, sys, time
if sys.argv[1] == "jwt":  # a deployed function has verified the caller's token: PyJWT is loaded
    import jwt.algorithms
from rag_orchestrator.tools.http_tool import HttpTool
from rag_orchestrator.tools.assertion import AssertionSigner
from rag_orchestrator.domain.callers import Caller
signer = AssertionSigner("rag-orchestrator", lambda: os.environ["KEY_PEM"])
started = time.perf_counter()
signer.sign(Caller("alice"), "https://api.example.com", "list_orders", "conv-1")
print(time.perf_counter() - started)
"""


def _tool(identity: str):
    import httpx

    from rag_orchestrator.tools.assertion import AssertionSigner
    from rag_orchestrator.tools.catalog import parse_catalog
    from rag_orchestrator.tools.http_tool import ClientPool, HttpTool

    entry = {
        "name": "list_orders",
        "description": "orders",
        "inputSchema": {"type": "object", "properties": {"accountId": {"type": "string"}}},
        "http": {
            "method": "GET",
            "url": "https://api.example.com/accounts/{accountId}/orders",
            "contextParams": {"accountId": "claim:accountId"},
            "identity": identity,
        },
    }
    spec = parse_catalog({"tools": [entry]}).tools[0]
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json={"orders": []}))
    signer = AssertionSigner("rag-orchestrator", lambda: None, ephemeral=True)
    return HttpTool(spec, pool=ClientPool(transport), assertions=signer)


def run(quick: bool = False) -> Section:
    from rag_orchestrator.domain.callers import Caller
    from rag_orchestrator.tools.assertion import AssertionSigner
    from rag_orchestrator.tools.base import ToolContext

    section = Section("assertion", packages=["pyjwt", "cryptography"])
    rounds = 5 if quick else 30
    signer, caller = (
        AssertionSigner("rag-orchestrator", lambda: None, ephemeral=True),
        Caller("alice", ("user",)),
    )
    for _ in range(50):
        signer.sign(caller, "https://api.example.com", "list_orders", "conv-1")
    samples = []
    for _ in range(rounds):
        started = time.thread_time()
        for _ in range(PER_ROUND):
            signer.sign(caller, "https://api.example.com", "list_orders", "conv-1")
        samples.append((time.thread_time() - started) / PER_ROUND * 1e6)
    section.add("sign one assertion (ES256), CPU", "µs", samples)

    ctx = ToolContext("conv-1", "alice", ("user",), claims={"accountId": "acct-1001"})
    tools = {identity: _tool(identity) for identity in ("assertion", "none")}
    per_call: dict[str, list[float]] = {identity: [] for identity in tools}

    async def calls(tool, count: int) -> None:
        for _ in range(count):
            result = await tool.execute({}, ctx)
            assert result.success, result.error

    async def main() -> None:
        for tool in tools.values():
            await calls(tool, 50)  # warm: clients, validators, the key
        for _ in range(max(3, rounds // 3)):
            for identity, tool in tools.items():
                started = time.process_time()
                await calls(tool, PER_ROUND)
                per_call[identity].append((time.process_time() - started) / PER_ROUND * 1e6)

    asyncio.run(main())
    section.add("HTTP tool call, identity: assertion, CPU", "µs", per_call["assertion"])
    section.add("HTTP tool call, identity: none, CPU", "µs", per_call["none"])
    added = [a - n for a, n in zip(per_call["assertion"], per_call["none"], strict=True)]
    section.add("added by the assertion, CPU", "µs", added)

    from rag_orchestrator.tools.assertion import generate_key_pem

    env = {"PYTHONPATH": str(ROOT / "layers" / "core"), "KEY_PEM": generate_key_pem()}
    for mode, label in (("jwt", "PyJWT loaded, as in jwt mode"), ("dev", "nothing loaded yet")):
        firsts = []
        for _ in range(2 if quick else 5):
            argv = [sys.executable, "-c", FIRST_SIGN, mode]
            done = subprocess.run(argv, capture_output=True, text=True, env=env, check=True, timeout=60)
            firsts.append(float(done.stdout.split()[-1]) * 1000)
        section.add(f"fresh process, first assertion ({label})", "ms", firsts)
    return section
