"""Cold start: fresh processes in the Lambda-like layout (bench/layout.py).

1. Each function's app module (every functions/*/app.py), imported and initialised by a fresh
   `python -S` with a deployed function's environment: seconds from spawn until the import is done
   (time.monotonic() is system-wide, so the child's clock reading compares with the parent's).
   One more run with `-X importtime` gives the top imports by cumulative time.
2. A fresh chat-stream process (uvicorn, as run.sh starts it) until it listens, and until the first
   ResponseChunk of a turn sent as soon as it listens (JWT auth, DynamoDB on moto, Chroma, fake LLM),
   alternated process by process with the same function at BASELINE_COMMIT (bench/layout.py: the code
   before the third wave's cold-start work) on the same dependencies: wall time and the process's CPU
   time, and their ratios pair by pair.
   Then the CPU until the process is idle again after that turn: its after-work (conversation memory
   indexing the turn's fragments in Chroma) included.
3. Peak resident memory (the kernel's VmHWM): of each function once its app module is imported, and
   of the chat-stream process over its first turn, once its after-work is done.
4. What the first turn's imports and clients cost on their own, and what a stream app on Starlette alone
   would leave out (FastAPI's import beyond Starlette and pydantic, and its route building), in CPU time.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from dataclasses import dataclass

from bench import layout as lambda_layout
from bench import stack as local
from bench.memory_use import cpu_seconds, settled_cpu_seconds
from bench.report import Section, versions

READY_GOAL_S = 0.5
FIRST_TOKEN_GOAL_S = 0.8
BASELINE_RATIO_GOAL = 0.7  # issue 35: listening and first token each at most 0.7x the pinned baseline's
CHILD = "import app, time; print('@@READY', time.monotonic(), open('/proc/self/status').read())"
TOP_IMPORTS = 15
LAYOUT_PACKAGES = [
    "fastapi",
    "starlette",
    "pydantic",
    "aws-lambda-powertools",
    "aws-xray-sdk",
    "uvicorn",
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
    "import boto3": "import boto3",
    "import boto3 + DynamoDB, S3 and SSM clients, one Session each (before)": (
        "import boto3\nfor s in ('dynamodb', 's3', 'ssm'): boto3.session.Session().client(s)"
    ),
    "import boto3 + DynamoDB and SSM clients from one shared Session (a first turn now; S3 is lazy)": (
        "import boto3\nsession = boto3.session.Session()\nfor s in ('dynamodb', 'ssm'): session.client(s)"
    ),
    "import jwt with its RSA algorithms (cryptography)": "import jwt.algorithms",
    "import botocore + DynamoDB and SSM clients from one botocore Session (boto3 left out)": (
        "import botocore.session\nsession = botocore.session.get_session()\n"
        "for s in ('dynamodb', 'ssm'): session.create_client(s, region_name='us-east-1')"
    ),
    "the DynamoDB and SSM clients a first turn makes now (aws_json.py; the environment holds credentials)": (
        "from rag_orchestrator.aws import AwsClients\nclients = AwsClients()\n"
        "for s in ('dynamodb', 'ssm'): clients.client(s)\n"
        "from rag_orchestrator.attribute_values import serialize"
    ),
}
# A first turn's memory indexing, Chroma's side: get or create the collection by name, upsert the turn's
# fragments (4 of 256 dimensions here). Today over the REST API (httpx is loaded by then); before, through
# chromadb-client, whose import the baseline's first indexing paid (measured in the baseline's layout).
MEMORY_WRITE = """
from rag_orchestrator.retrieval.chroma_http import ChromaClient
client = ChromaClient({url!r}, tenant="default_tenant", database="default_database", token=None)
found = client.get_or_create_collection("bench-cold-first-write", {{"embedder": "bench/256"}})
client.upsert(found.id, [f"f{{i}}" for i in range(4)], [[0.0625] * 256] * 4, ["fragment"] * 4, [{{"n": i}} for i in range(4)])
"""
MEMORY_WRITE_BEFORE = """
import chromadb
from chromadb.config import Settings
client = chromadb.HttpClient(host={host!r}, port={port}, settings=Settings(anonymized_telemetry=False))
found = client.get_or_create_collection(
    "bench-cold-first-write", configuration={{"hnsw": {{"space": "cosine"}}}}, metadata={{"embedder": "bench/256"}},
    embedding_function=None,
)
found.upsert(ids=[f"f{{i}}" for i in range(4)], embeddings=[[0.0625] * 256] * 4, documents=["fragment"] * 4,
             metadatas=[{{"n": i}} for i in range(4)])
"""
# What the stream app, on Starlette alone since round three (api/routing.py), leaves out of a cold start:
# FastAPI's import on top of what the app has loaded (its OpenAPI models, params and routing).
STARLETTE_APP = {
    "FastAPI modules the stream app imports": (
        "import app, sys\nprint(sum(1 for m in sys.modules if m.split('.')[0] == 'fastapi'))"
    ),
}
FASTAPI_AFTER_APP = "import fastapi"


def _cost_once(layout: lambda_layout.Layout, statement: str, setup: str = "") -> float:
    # CPU time: on a machine shared with other work, wall time measures the queue as much as the import
    code = f"{setup}\nimport time\nstarted = time.process_time()\n{statement}\nprint(time.process_time() - started)"
    return float(_child(layout, code).split()[-1])


def _memory_write_costs(
    layout: lambda_layout.Layout, baseline: lambda_layout.Layout, chroma_url: str
) -> dict:
    """A first memory indexing's Chroma writes in a fresh process, today and at the baseline (ms of CPU)."""
    import httpx

    url = httpx.URL(chroma_url)
    loaded = "import httpx, pydantic, rag_orchestrator.config"  # a first turn has loaded these already
    today = MEMORY_WRITE.format(url=chroma_url)
    before = MEMORY_WRITE_BEFORE.format(host=url.host, port=url.port)

    def median_ms(where: lambda_layout.Layout, statement: str, setup: str = loaded) -> int:
        return round(statistics.median(_cost_once(where, statement, setup) for _ in range(5)) * 1000)

    return {
        "import chromadb (the baseline's first memory indexing; its layout)": median_ms(
            baseline, "import chromadb"
        ),
        "get-or-create + upsert of 4 fragments through chromadb-client, import included (baseline)": median_ms(
            baseline, before
        ),
        "get-or-create + upsert of 4 fragments over the REST API, chroma_http's import included (today)": (
            median_ms(layout, today)
        ),
    }


def _child(layout: lambda_layout.Layout, code: str) -> str:
    """What a fresh chat-stream interpreter running `code` prints."""
    proc = subprocess.run(
        [sys.executable, "-S", "-c", code],
        cwd=layout.function_dir("chat_stream"),
        env=layout.env("chat_stream"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{code!r} failed\n{proc.stderr[-2000:]}")
    return proc.stdout


@dataclass(frozen=True)
class Result:
    """A fresh chat-stream process: seconds and its CPU seconds until it listens and until its first
    ResponseChunk, and its peak RSS (MiB) over the turn."""

    listening: float
    first_chunk: float
    listening_cpu: float
    first_chunk_cpu: float
    settled_cpu: float  # until idle after the turn: its after-work (memory indexing) done
    peak: float


def _first_token_once(layout: lambda_layout.Layout, stack: local.LocalStack) -> Result:
    conversation = stack.conversation()
    token = stack.token()
    process = local.ChatStreamProcess(layout, stack.stream_env(layout))
    try:
        ready = process.wait_listening()
        ready_cpu = cpu_seconds(process.process.pid)
        at_first: list[float] = []
        turn = local.stream_turn(
            process.port,
            conversation,
            token,
            "How do I run the test suite?",
            on_first_chunk=lambda: at_first.append(cpu_seconds(process.process.pid)),
        )
        if turn.status != 200 or turn.first_chunk_at is None or turn.events[-1:] != ["Completed"]:
            raise RuntimeError(f"turn failed: {turn.status} {turn.events}\n{process.output()}")
        settled = settled_cpu_seconds(process.process.pid)
        with open(f"/proc/{process.process.pid}/status") as status:
            peak = peak_mib(status.read())
        return Result(ready, turn.first_chunk_at - process.started, ready_cpu, at_first[0], settled, peak)
    finally:
        process.stop()


def _against_baseline(section: Section, pairs: list[tuple[Result, Result]]) -> None:
    """Baseline and today's process alternated, one pair at a time: each pair's ratio, so that the
    machine's drift (it moves by tens of percent within minutes) cancels out; and the same on the
    process's CPU time, which other work on the machine moves far less than its wall time."""
    commit = lambda_layout.BASELINE_COMMIT[:7]
    measures = (
        ("listening", "fresh process until it listens", "s", True),
        ("first_chunk", "fresh process until it sends the first ResponseChunk", "s", True),
        ("listening_cpu", "CPU until it listens", "s CPU", True),
        ("first_chunk_cpu", "CPU until it sends the first ResponseChunk", "s CPU", True),
        ("settled_cpu", "CPU until its first turn's after-work (memory indexing) is done", "s CPU", False),
    )
    for field, what, unit, with_goal in measures:
        before = [getattr(b, field) for b, _ in pairs]
        now = [getattr(n, field) for _, n in pairs]
        if field.endswith("_cpu"):
            section.add(f"chat_stream: {what}", unit, now)
        section.add(f"chat_stream baseline ({commit}): {what}", unit, before)
        ratio = section.add(
            f"chat_stream: {what}, today ÷ baseline ({commit}), pair by pair",
            "x",
            [n / b for b, n in zip(before, now, strict=True)],
        )
        if with_goal:
            ratio.goal, ratio.met = f"<= {BASELINE_RATIO_GOAL} median", ratio.median <= BASELINE_RATIO_GOAL


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
    baseline = lambda_layout.prepare_baseline(layout)
    _first_token_once(layout, stack)  # warms the servers' caches, not the process under test
    _first_token_once(baseline, stack)
    pairs = [(_first_token_once(baseline, stack), _first_token_once(layout, stack)) for _ in range(runs)]
    results = [now for _, now in pairs]
    ready = section.add(
        "chat_stream: fresh uvicorn process until it listens", "s", [r.listening for r in results]
    )
    ready.goal, ready.met = f"<= {READY_GOAL_S} s median", ready.median <= READY_GOAL_S
    first = section.add(
        "chat_stream: fresh process until the first ResponseChunk", "s", [r.first_chunk for r in results]
    )
    first.goal, first.met = f"<= {FIRST_TOKEN_GOAL_S} s median", first.median <= FIRST_TOKEN_GOAL_S
    _against_baseline(section, pairs)
    section.add(
        "chat_stream: peak RSS over its first turn (memory indexing included)",
        "MiB",
        [r.peak for r in results],
    )
    section.add(
        f"chat_stream baseline ({lambda_layout.BASELINE_COMMIT[:7]}): peak RSS over its first turn",
        "MiB",
        [b.peak for b, _ in pairs],
    )
    section.details["first-turn costs in a fresh process (median of 5, ms of CPU)"] = {
        **{
            name: round(statistics.median(_cost_once(layout, code) for _ in range(5)) * 1000)
            for name, code in FIRST_TURN_COSTS.items()
        },
        **_memory_write_costs(layout, baseline, stack.env["CHROMA_URL"]),
    }
    _starlette_alternative(section, layout)
    return section


def _starlette_alternative(section: Section, layout: lambda_layout.Layout) -> None:
    """What the stream app on Starlette alone saves: FastAPI's import, measured after the app's own."""
    ((name, code),) = STARLETTE_APP.items()
    loaded = int(_child(layout, code).split()[-1])
    saved = statistics.median(_cost_once(layout, FASTAPI_AFTER_APP, "import app") for _ in range(5)) * 1000
    section.details["the stream app on Starlette alone (fresh processes, median of 5, ms of CPU)"] = {
        name: loaded,
        "import fastapi after the app is loaded (what the app no longer pays)": round(saved),
    }
