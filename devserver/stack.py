"""Start and stop the local parts: a moto server (DynamoDB + S3) and a Chroma server."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.error import URLError
from urllib.parse import urlparse
from urllib.request import urlopen

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

LOCAL_DEFAULTS = {
    "AWS_ENDPOINT_URL": "http://127.0.0.1:5001",
    "AWS_ACCESS_KEY_ID": "local",
    "AWS_SECRET_ACCESS_KEY": "local",
    "AWS_DEFAULT_REGION": "us-east-1",
    "CONVERSATIONS_TABLE": "rag-orchestrator-conversations-local",
    "TRANSCRIPTS_BUCKET": "rag-orchestrator-transcripts-local",
    "DOCUMENTS_BUCKET": "rag-orchestrator-documents-local",
    "ATTACHMENTS_BUCKET": "rag-orchestrator-attachments-local",
    # Offline engines whose models ship in their wheels (dev dependencies); no caption model offline.
    "ATTACHMENT_OCR_BACKEND": "rapidocr",
    "ATTACHMENT_SPEECH_BACKEND": "pocketsphinx",
    "CHROMA_URL": "http://127.0.0.1:8001",
    "AUTH_MODE": "dev",
    "MODEL_STRATEGY": "extractive",
    "EMBEDDING_PROVIDER": "hashing",
    "POWERTOOLS_TRACE_DISABLED": "true",
    "POWERTOOLS_METRICS_DISABLED": "true",
}


S3_EVENTS_PATH = "/_local/s3-events"  # where the dev app takes the S3 events the moto server sends

# The offline embedders score a right passage far below the documented default 0.6 (hashing 0.05-0.45, wordllama
# 0.18-0.78: docs/retrieval.md), which would hide everything from a local /query; these apply only when
# RAG_SIMILARITY_THRESHOLD is unset.
LOCAL_SIMILARITY_THRESHOLDS = {"hashing": "0.1", "wordllama": "0.15"}


def apply_local_defaults(environ: dict[str, str] | None = None) -> dict[str, str]:
    """Fill in the local defaults; variables already set win, so a second stack can run beside."""
    environ = os.environ if environ is None else environ
    for key, value in LOCAL_DEFAULTS.items():
        environ.setdefault(key, value)
    threshold = LOCAL_SIMILARITY_THRESHOLDS.get(environ.get("EMBEDDING_PROVIDER", ""))
    if threshold:
        environ.setdefault("RAG_SIMILARITY_THRESHOLD", threshold)
    return environ


def use_assertion_key(path: Path, environ: dict[str, str] | None = None) -> None:
    """The key the dev server signs caller assertions with (ASSERTION_PRIVATE_KEY), kept at `path`
    so tool APIs that cached the key set keep verifying across restarts; made on first use."""
    environ = os.environ if environ is None else environ
    if environ.get("ASSERTION_PRIVATE_KEY"):
        return
    if not path.exists():
        from rag_orchestrator.tools.assertion import generate_key_pem

        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o600)
        path.write_text(generate_key_pem())
    environ["ASSERTION_PRIVATE_KEY"] = path.read_text()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def host_port(url: str) -> tuple[str, int]:
    parsed = urlparse(url)
    return parsed.hostname or "127.0.0.1", parsed.port or 80


def wait_http(url: str, timeout: float = 30.0, process: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"process for {url} exited with {process.returncode}")
        try:
            with urlopen(url, timeout=1):
                return
        except (URLError, OSError):
            time.sleep(0.1)
    raise TimeoutError(f"{url} did not answer within {timeout}s")


@dataclass
class Service:
    name: str
    url: str
    process: subprocess.Popen = field(repr=False)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(5)


def _spawn(name: str, argv: list[str], url: str, health_path: str, log: Path, timeout: float) -> Service:
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        process = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, cwd=ROOT
        )
    service = Service(name, url, process)
    try:
        wait_http(url.rstrip("/") + health_path, timeout, process)
    except Exception:
        service.stop()
        raise RuntimeError(f"{name} did not start; see {log}") from None
    return service


def start_moto(url: str, log: Path, notify: str | None = None) -> Service:
    """The moto server; with `notify`, uploads under attachments/ are sent there as S3 events."""
    host, port = host_port(url)
    argv = [sys.executable, "-m", "devserver.moto_serial", "-H", host, "-p", str(port)]
    if notify:
        argv += ["--notify", notify]
    return _spawn("moto", argv, url, "/moto-api/", log, timeout=60)


def start_chroma(url: str, data_dir: Path, log: Path) -> Service:
    host, port = host_port(url)
    chroma = BIN / "chroma"
    if not chroma.exists():
        chroma = Path(shutil.which("chroma") or "chroma")
    data_dir.mkdir(parents=True, exist_ok=True)
    argv = [str(chroma), "run", "--path", str(data_dir), "--host", host, "--port", str(port)]
    return _spawn("chroma", argv, url, "/api/v2/heartbeat", log, timeout=60)
