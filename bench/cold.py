"""Cold start: fresh processes in the Lambda-like layout (bench/layout.py).

1. Each function's app module (every functions/*/app.py), imported and initialised by a fresh
   `python -S` with a deployed function's environment: seconds from spawn until the import is done
   (time.monotonic() is system-wide, so the child's clock reading compares with the parent's).
   One more run with `-X importtime` gives the top imports by cumulative time.
2. A fresh chat-stream process (uvicorn, as run.sh starts it) until it listens, and until the first
   ResponseChunk of a turn sent as soon as it listens (JWT auth, DynamoDB on moto, Chroma, fake LLM).
3. Peak resident memory (the kernel's VmHWM): of each function once its app module is imported, and
   of the chat-stream process over its first turn, after-turn memory indexing included.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

from bench import layout as lambda_layout
from bench import stack as local
from bench.report import Section, versions

READY_GOAL_S = 0.5
FIRST_TOKEN_GOAL_S = 0.8
CHILD = "import app, time; print('@@READY', time.monotonic(), open('/proc/self/status').read())"
TOP_IMPORTS = 15
LAYOUT_PACKAGES = [
    "fastapi",
    "starlette",
    "pydantic",
    "aws-lambda-powertools",
    "aws-xray-sdk",
    "uvicorn",
    "chromadb-client",
    "httpx",
    "botocore",
    "boto3",
]


def peak_mib(status: str) -> float:
    """VmHWM of a /proc/<pid>/status text, in MiB."""
    line = next(line for line in status.splitlines() if line.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def _import_once(layout: lambda_layout.Layout, function: str, *flags: str) -> tuple[float, str, float]:
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-S", *flags, "-c", CHILD],
        cwd=layout.function_dir(function),
        env=layout.env(function),
        capture_output=True,
        text=True,
        timeout=120,
    )
    if proc.returncode != 0 or "@@READY" not in proc.stdout:
        raise RuntimeError(f"{function}: importing app failed\n{proc.stderr[-3000:]}")
    ready, status = proc.stdout.rsplit("@@READY", 1)[1].split(None, 1)
    return float(ready) - started, proc.stderr, peak_mib(status)


def top_imports(importtime: str, limit: int = TOP_IMPORTS) -> list[dict[str, object]]:
    """The heaviest imports by cumulative time, each with its nesting depth under the app module."""
    rows = []
    for line in importtime.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        self_us, cumulative_us, name = line.removeprefix("import time:").split("|", 2)
        depth = (len(name) - len(name.lstrip())) // 2
        rows.append((int(cumulative_us), int(self_us), name.strip(), depth))
    rows = [r for r in rows if r[2] != "app"]
    rows.sort(reverse=True)
    return [
        {
            "module": name,
            "cumulative ms": round(cum / 1000, 1),
            "self ms": round(own / 1000, 1),
            "depth": depth,
        }
        for cum, own, name, depth in rows[:limit]
    ]


# What the first turn of a fresh chat-stream process imports or builds besides the app module.
FIRST_TURN_COSTS = {
    "import chromadb (ingestion's writes only: searches read Chroma over plain httpx)": "import chromadb",
    "import boto3": "import boto3",
    "import boto3 + DynamoDB, S3 and SSM clients, one Session each (before)": (
        "import boto3\nfor s in ('dynamodb', 's3', 'ssm'): boto3.session.Session().client(s)"
    ),
    "import boto3 + DynamoDB and SSM clients from one shared Session (a first turn now; S3 is lazy)": (
        "import boto3\nsession = boto3.session.Session()\nfor s in ('dynamodb', 'ssm'): session.client(s)"
    ),
    "import jwt with its RSA algorithms (cryptography)": "import jwt.algorithms",
}


def _cost_once(layout: lambda_layout.Layout, statement: str) -> float:
    code = f"import time\nstarted = time.perf_counter()\n{statement}\nprint(time.perf_counter() - started)"
    proc = subprocess.run(
        [sys.executable, "-S", "-c", code],
        cwd=layout.function_dir("chat_stream"),
        env=layout.env("chat_stream"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{statement!r} failed\n{proc.stderr[-2000:]}")
    return float(proc.stdout.split()[-1])


def _first_token_once(layout: lambda_layout.Layout, stack: local.LocalStack) -> tuple[float, float, float]:
    conversation = stack.conversation()
    token = stack.token()
    process = local.ChatStreamProcess(layout, stack.stream_env(layout))
    try:
        ready = process.wait_listening()
        turn = local.stream_turn(process.port, conversation, token, "How do I run the test suite?")
        if turn.status != 200 or turn.first_chunk_at is None or turn.events[-1:] != ["Completed"]:
            raise RuntimeError(f"turn failed: {turn.status} {turn.events}\n{process.output()}")
        with open(f"/proc/{process.process.pid}/status") as status:
            peak = peak_mib(status.read())
        return ready, turn.first_chunk_at - process.started, peak
    finally:
        process.stop()


def run(quick: bool = False) -> Section:
    section = Section("cold")
    runs = 5 if quick else 15
    layout = lambda_layout.prepare()
    section.details["versions in the layout"] = versions(LAYOUT_PACKAGES, [layout.layer, layout.runtime])
    section.details["layout"] = (
        f"under {lambda_layout.BASE.relative_to(lambda_layout.ROOT)}: python -S, PYTHONPATH = function code, "
        "the core layer as layers/core/build_layer.py makes it (bytecode included), the runtime's boto3; "
        "PYTHONDONTWRITEBYTECODE=1 (Lambda's /opt and /var/task are read-only)"
    )
    for function in lambda_layout.functions():
        _import_once(layout, function)  # the first run after a copy pays for the page cache; not kept
        imports = [_import_once(layout, function) for _ in range(runs)]
        figure = section.add(
            f"{function}: fresh process until the app module is imported", "s", [i[0] for i in imports]
        )
        section.add(f"{function}: peak RSS once the app module is imported", "MiB", [i[2] for i in imports])
        if function == "chat_stream":
            figure.goal, figure.met = f"<= {READY_GOAL_S} s median", figure.median <= READY_GOAL_S
        _, importtime, _ = _import_once(layout, function, "-X", "importtime")
        section.details[f"top imports of {function} (-X importtime)"] = top_imports(importtime)

    from tests.fakes.llm_script import text_reply

    stack = local.shared()
    stack.llm.default = text_reply("Run make test [source:guide#0].", chunks=5)
    _first_token_once(layout, stack)  # warms the servers' caches, not the process under test
    results = [_first_token_once(layout, stack) for _ in range(max(3, runs // 2))]
    ready = section.add("chat_stream: fresh uvicorn process until it listens", "s", [r[0] for r in results])
    ready.goal, ready.met = f"<= {READY_GOAL_S} s median", ready.median <= READY_GOAL_S
    first = section.add(
        "chat_stream: fresh process until the first ResponseChunk", "s", [r[1] for r in results]
    )
    first.goal, first.met = f"<= {FIRST_TOKEN_GOAL_S} s median", first.median <= FIRST_TOKEN_GOAL_S
    section.add(
        "chat_stream: peak RSS over its first turn (memory indexing included)", "MiB", [r[2] for r in results]
    )
    section.details["first-turn costs in a fresh process (median of 5, ms)"] = {
        name: round(statistics.median(_cost_once(layout, code) for _ in range(5)) * 1000)
        for name, code in FIRST_TURN_COSTS.items()
    }
    return section
