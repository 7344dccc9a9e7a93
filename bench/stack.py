"""Local parts for the benchmarks that need a wire: moto server, Chroma server, fake LLM, JWKS.

Started once per `python -m bench` run, on free loopback ports, and stopped at the end. The
chat-stream app runs as its own uvicorn process in the Lambda-like layout (bench/layout.py)
with a deployed function's settings: AUTH_MODE=jwt against the JWKS server, DynamoDB and S3 on
moto, Chroma, and MODEL_STRATEGY=openai_compatible against the fake LLM.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.layout import Layout
from bench.report import ROOT
from devserver.lambda_env import JWT_AUDIENCE, JWT_ISSUER

GUIDE = (
    "The suite runs with make test on a fresh machine. It starts a moto server and a Chroma server.\n\n"
    "The dev server starts with make dev and listens on port 8000 by default."
)
CALLER = "bench-user"


@dataclass
class LocalStack:
    """Everything a chat-stream process talks to; `settings` are for in-process use (same resources)."""

    work: Path
    services: list[Any] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)

    def start(self) -> LocalStack:
        from devserver.stack import free_port, start_chroma, start_moto
        from tests.fakes.fake_llm import FakeLLM
        from tests.fakes.jwks_server import JwksServer, SigningKey

        moto = start_moto(f"http://127.0.0.1:{free_port()}", self.work / "moto.log")
        self.services.append(moto)
        # Nothing in the bench's Chroma is worth keeping, and what an earlier run left (vectors of an
        # earlier embedder, say) would refuse this run's ingestion: each run starts on an empty store.
        shutil.rmtree(self.work / "chroma", ignore_errors=True)
        chroma = start_chroma(
            f"http://127.0.0.1:{free_port()}", self.work / "chroma", self.work / "chroma.log"
        )
        self.services.append(chroma)
        self.llm = FakeLLM().start()
        self.jwks = JwksServer().__enter__()
        self.key = SigningKey("bench-key")
        self.jwks.keys.append(self.key)
        self.env = {
            "AWS_ENDPOINT_URL": moto.url,
            "AWS_ACCESS_KEY_ID": "bench",
            "AWS_SECRET_ACCESS_KEY": "bench",
            "AWS_DEFAULT_REGION": "us-east-1",
            "CONVERSATIONS_TABLE": "rag-orchestrator-bench-conversations",
            "TRANSCRIPTS_BUCKET": "rag-orchestrator-bench-transcripts",
            "DOCUMENTS_BUCKET": "rag-orchestrator-bench-documents",
            "CHROMA_URL": chroma.url,
            "CHROMA_COLLECTION": "bench-knowledge-base",
            "CHROMA_MEMORY_COLLECTION": "bench-memory",
            "RAG_SIMILARITY_THRESHOLD": "0.05",  # the hashing embedder scores low (docs/retrieval.md)
            "JWT_JWKS_URL": self.jwks.url,
            "POWERTOOLS_METRICS_DISABLED": "false",
            # Each benchmark's turns start new conversations: a title call after each would be a
            # second reply of the fake LLM per turn. bench/titles.py measures it on its own.
            "AUTO_TITLE": "false",
        }
        os.environ.update(self.env)  # boto3 in this process reads AWS_* from the environment
        from rag_orchestrator.api.deps import process_aws

        process_aws().reset()  # clients made for an earlier stack point at its endpoint
        self._provision()
        _put_secrets()
        return self

    def _provision(self) -> None:
        from devserver.resources import create_resources
        from rag_orchestrator.api.deps import process_aws
        from rag_orchestrator.retrieval.ingestion import ingest_documents
        from rag_orchestrator.retrieval.knowledge_base import create_knowledge_base

        create_resources(
            self.env["CONVERSATIONS_TABLE"], [self.env["TRANSCRIPTS_BUCKET"], self.env["DOCUMENTS_BUCKET"]]
        )
        ingest_documents(
            [{"documentId": "guide", "title": "Guide", "text": GUIDE}],
            create_knowledge_base(self.settings(), process_aws()),
        )

    def fresh_table(self) -> None:
        """The conversations table made anew, so that a benchmark starts from an empty store: what the
        earlier ones wrote would slow moto's index queries (it scans a table for them) and fill its memory."""
        import boto3

        boto3.client("dynamodb").delete_table(TableName=self.env["CONVERSATIONS_TABLE"])
        self._provision()

    def moto_peak_mib(self) -> float:
        """The moto server's peak resident memory so far (VmHWM)."""
        status = Path(f"/proc/{self.services[0].process.pid}/status").read_text()
        return int(status.split("VmHWM:")[1].split()[0]) / 1024

    def stop(self) -> None:
        if hasattr(self, "llm"):
            self.llm.stop()
        if hasattr(self, "jwks"):
            self.jwks.__exit__()
        for service in reversed(self.services):
            service.stop()

    def settings(self, **overrides: Any) -> Any:
        from rag_orchestrator.config import load_settings

        values: dict[str, Any] = {k.lower(): v for k, v in self.env.items() if not k.startswith("AWS_")}
        values |= {"auth_mode": "dev", "conversation_storage": "dynamodb"} | overrides
        return load_settings(**values)

    def token(self) -> str:
        now = int(time.time())
        claims = {
            "sub": CALLER,
            "iss": JWT_ISSUER,
            "aud": JWT_AUDIENCE,  # what the function's environment expects
            "iat": now,
            "exp": now + 3600,
        }
        return self.key.sign(claims)

    def conversation(self) -> str:
        """A new conversation of CALLER, created through the store (the stream app serves no create route)."""
        from rag_orchestrator.api.deps import process_aws
        from rag_orchestrator.conversations.factory import create_store
        from rag_orchestrator.domain.conversations import Conversation

        created = asyncio.run(
            create_store(self.settings(), process_aws()).create(Conversation(caller_id=CALLER))
        )
        return created.conversation_id

    def stream_env(self, layout: Layout) -> dict[str, str]:
        """A deployed chat-stream function's environment: its keys come from SSM (on moto), as in AWS."""
        env = {k: v for k, v in self.env.items() if k != "POWERTOOLS_METRICS_DISABLED"}
        llm = self.llm.settings_for("openai_compatible")
        env |= {k.upper(): str(v) for k, v in llm.items() if not k.endswith("_api_key")}
        return layout.env("chat_stream", **env)


def _put_secrets() -> None:
    """The SSM parameters template.yaml's functions read their keys from (names as in layout.env)."""
    import boto3

    ssm = boto3.client("ssm")
    for name in ("/rag-orchestrator/openai-compatible-api-key", "/rag-orchestrator/chroma-token"):
        ssm.put_parameter(Name=name, Value="bench-secret", Type="SecureString", Overwrite=True)


class UvicornProcess:
    """uvicorn serving `app` on a free loopback port, in a process of its own; without `site`, started
    with `-S` (nothing but PYTHONPATH, as in the Lambda layout)."""

    def __init__(
        self,
        app: str,
        cwd: Path,
        env: dict[str, str],
        *,
        app_dir: Path | None = None,
        site: bool = True,
        preexec: Callable[[], None] | None = None,
    ) -> None:
        """`preexec` runs in the child before uvicorn starts (bench/cpu_share.py: joining a cgroup)."""
        from devserver.stack import free_port

        self.port = free_port()
        argv = [sys.executable, *([] if site else ["-S"]), "-m", "uvicorn", "--host", "127.0.0.1"]
        argv += [*(["--app-dir", str(app_dir)] if app_dir else []), "--port", str(self.port)]
        argv += ["--no-access-log", "--timeout-keep-alive", "60", app]
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 (closed by stop())
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=preexec,  # writes one file before the exec
        )

    def wait_listening(self, timeout: float = 60.0) -> float:
        """Seconds from spawn until the port accepts connections (the adapter's readiness check)."""
        deadline = self.started + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"uvicorn process exited:\n{self.output()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return time.monotonic() - self.started
            except OSError:
                time.sleep(0.002)
        raise TimeoutError(f"uvicorn process did not listen within {timeout}s:\n{self.output()}")

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-4000:]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self.log.close()


class ChatStreamProcess(UvicornProcess):
    """`functions/chat_stream/run.sh` as the Lambda Web Adapter starts it: uvicorn serving app:app."""

    def __init__(
        self, layout: Layout, env: dict[str, str], preexec: Callable[[], None] | None = None
    ) -> None:
        function_dir = layout.function_dir("chat_stream")
        super().__init__("app:app", function_dir, env, app_dir=function_dir, site=False, preexec=preexec)


@dataclass
class StreamedTurn:
    status: int
    sent_at: float  # time.monotonic() when the request was sent
    first_chunk_at: float | None  # time.monotonic() when the first ResponseChunk event arrived
    completed_at: float | None  # ... when the Completed event arrived
    ended_at: float
    events: list[str]


def stream_turn(
    port: int,
    conversation_id: str,
    token: str,
    message: str,
    timeout: float = 30.0,
    on_first_chunk: Callable[[], None] | None = None,
) -> StreamedTurn:
    """POST the stream route over a plain socket and note when the first ResponseChunk arrives (and
    call `on_first_chunk` then).

    A plain socket keeps the client's own cost out of the measurement (no HTTP library on top).
    """
    body = json.dumps({"message": message}).encode()
    head = (
        f"POST /api/v1/chat/conversations/{conversation_id}/messages/stream HTTP/1.1\r\n"
        f"Host: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\n"
        f"Accept: text/event-stream\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    first: float | None = None
    completed: float | None = None
    received = b""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.sendall(head.encode() + body)
        sent = time.monotonic()
        while True:
            data = sock.recv(65536)
            if not data:
                break
            if first is None and b"event: ResponseChunk" in received[-32:] + data:
                first = time.monotonic()
                if on_first_chunk is not None:
                    on_first_chunk()
            if completed is None and b"event: Completed" in received[-32:] + data:
                completed = time.monotonic()
            received += data
    ended = time.monotonic()
    status_line, _, rest = received.partition(b"\r\n")
    status = int(status_line.split()[1]) if status_line.startswith(b"HTTP/") else 0
    events = [line[7:].decode() for line in rest.split(b"\n") if line.startswith(b"event: ")]
    return StreamedTurn(status, sent, first, completed, ended, events)


_stack: LocalStack | None = None


def shared() -> LocalStack:
    """The run's local stack, started on first use."""
    global _stack
    if _stack is None:
        work = ROOT / ".local" / "bench" / "stack"
        work.mkdir(parents=True, exist_ok=True)
        _stack = LocalStack(work)
        try:
            _stack.start()
        except BaseException:
            _stack.stop()
            _stack = None
            raise
    return _stack


def started() -> LocalStack | None:
    """The run's local stack if a benchmark has started it."""
    return _stack


def stop_shared() -> None:
    global _stack
    if _stack is not None:
        _stack.stop()
        _stack = None
