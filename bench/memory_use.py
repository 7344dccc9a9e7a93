"""Peak memory and CPU of the heavy one-off work, each in a fresh process.

Peak memory is the kernel's VmHWM, not getrusage's ru_maxrss: Linux carries ru_maxrss over an exec,
so a child of this (large) process would report the parent's size. CPU is getrusage's.

1. Ingestion of a 50-, 100- and 145-page PDF (about 3.4 KB of text a page; a document holds at most
   500,000 characters): the IngestFunction's handler in the Lambda layout (bench/layout.py, `python
   -S`), given the S3 event of the object put in the bench stack's moto server; it extracts the text
   (pypdf), chunks, embeds (the hashing embedder) and writes Chroma.
2. Attachment preprocessing with the engines of `make dev` (dev dependencies, not in the layer): a
   20-page PDF (pypdf, as in AWS), an image read by rapidocr and one minute of WAV by pocketsphinx. In
   AWS Textract and Transcribe do the OCR and the speech, so the function only waits for them.

3. The CPU a chat-stream process spends until it listens, on its first turn and per warm turn.

Each of 1 and 2 reports the peak RSS once its modules are imported, the peak at the end, and the CPU seconds and
wall seconds of the work alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import layout as lambda_layout
from bench import stack as local
from bench.report import ROOT, Section

PAGES = (50, 100, 145)  # how memory grows; 145 pages are near the 500,000 characters a document may have
WARM_TURNS = 20
LINE = "The keeper checked the lamp, the lens and the clockwork, and noted the oil."  # 75 characters
MEASURE = """
import json, resource, sys, time
def usage():
    used = resource.getrusage(resource.RUSAGE_SELF)
    status = open("/proc/self/status").read().split("VmHWM:", 1)[1]
    return int(status.split()[0]) / 1024, used.ru_utime + used.ru_stime
{prepare}
imported, cpu = usage()
started = time.perf_counter()
{work}
wall = time.perf_counter() - started
peak, cpu_end = usage()
print("@@USAGE" + json.dumps({{"imported": imported, "peak": peak, "cpu": cpu_end - cpu, "wall": wall}}))
"""
INGEST = """
import app
class Context:
    function_name, memory_limit_in_mb, aws_request_id = "ingest", 1024, "bench"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:ingest"
event = json.loads(sys.argv[1])
"""
ENGINES = """
sys.path[:0] = [{core!r}]
from rag_orchestrator.attachments.uploads import Upload
from {module} import {reader}
body = open(sys.argv[1], "rb").read()
upload = Upload("bench", "attachments/bench/c/a", {content_type!r}, len(body), fetch=lambda: body)
"""
ATTACHMENTS = {
    "PDF, 20 pages (pypdf, as in AWS)": (
        "application/pdf",
        "rag_orchestrator.attachments.documents",
        "read_document",
    ),
    "image OCR (rapidocr)": ("image/png", "rag_orchestrator.attachments.ocr", "RapidOcrReader"),
    "WAV, 1 minute (pocketsphinx)": (
        "audio/wav",
        "rag_orchestrator.attachments.speech",
        "PocketsphinxTranscriber",
    ),
}
CALLS = {
    "read_document": "read_document(upload)",
    "RapidOcrReader": "RapidOcrReader().read_text(upload)",
    "PocketsphinxTranscriber": "PocketsphinxTranscriber().transcribe(upload)",
}


def measured(args: list[str], cwd: Path, env: dict[str, str] | None) -> dict[str, float]:
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0 or "@@USAGE" not in proc.stdout:
        raise RuntimeError(f"{args[:3]} failed\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.rsplit("@@USAGE", 1)[1].splitlines()[0])


def _ingest(stack: local.LocalStack, layout: lambda_layout.Layout, pages: int) -> dict[str, float]:
    from bench.attachments import pdf
    from rag_orchestrator.api.deps import process_aws

    aws = process_aws()

    body = pdf(pages, lines=44, line=LINE)
    bucket, key = stack.env["DOCUMENTS_BUCKET"], f"documents/bench-{pages}-pages.pdf"
    aws.client("s3").put_object(Bucket=bucket, Key=key, Body=body)
    event = {
        "Records": [
            {"eventName": "ObjectCreated:Put", "s3": {"bucket": {"name": bucket}, "object": {"key": key}}}
        ]
    }
    code = MEASURE.format(prepare=INGEST, work="result = app.handler(event, Context())")
    env = layout.env("ingest", **stack.env)
    return measured([sys.executable, "-S", "-c", code, json.dumps(event)], layout.function_dir("ingest"), env)


def _attachment(name: str, body: bytes) -> dict[str, float]:
    content_type, module, reader = ATTACHMENTS[name]
    prepare = ENGINES.format(
        core=str(ROOT / "layers" / "core"), module=module, reader=reader, content_type=content_type
    )
    with tempfile.NamedTemporaryFile(suffix=".bin") as file:
        file.write(body)
        file.flush()
        return measured(
            [sys.executable, "-c", MEASURE.format(prepare=prepare, work=CALLS[reader]), file.name], ROOT, None
        )


def _attachment_bodies() -> dict[str, bytes]:
    from bench.attachments import PAGES as PDF_PAGES
    from bench.attachments import minute_of_speech, pdf
    from tests.fakes.attachments import render_png

    image = render_png(["INVOICE 4711 due 30 June", "Paid by Alice Martin", "Total 1,250.00 EUR"])
    return dict(zip(ATTACHMENTS, (pdf(PDF_PAGES), image, minute_of_speech()), strict=True))


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def settled_cpu_seconds(pid: int, quiet: float = 1.0, limit: float = 30.0) -> float:
    """The process's CPU seconds once they have not grown for `quiet` seconds (its work done, it idles)."""
    deadline = time.monotonic() + limit
    last, since = cpu_seconds(pid), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now = cpu_seconds(pid)
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return now
    raise RuntimeError(f"process {pid} still busy after {limit:g} s")


def _chat_stream_cpu(
    section: Section, stack: local.LocalStack, layout: lambda_layout.Layout, warm: int
) -> None:
    """CPU a chat-stream process spends to start, on its first turn and per warm turn (the fake LLM
    answers at once, so this is the service's own work: what a smaller memory size slows down)."""
    from tests.fakes.llm_script import text_reply

    stack.llm.default = text_reply("Run make test [source:guide#0].", chunks=5)
    token = stack.token()
    process = local.ChatStreamProcess(layout, stack.stream_env(layout))
    try:
        process.wait_listening()
        pid = process.process.pid
        started = cpu_seconds(pid)
        for n in range(warm + 1):
            turn = local.stream_turn(
                process.port, stack.conversation(), token, "How do I run the test suite?"
            )
            if turn.events[-1:] != ["Completed"]:
                raise RuntimeError(f"turn failed: {turn.status} {turn.events}\n{process.output()}")
            if n == 0:
                first = cpu_seconds(pid)
        done = cpu_seconds(pid)
    finally:
        process.stop()
        stack.llm.default = None
    section.add("chat-stream: CPU until listening", "s", started)
    section.add("chat-stream: CPU of the first turn", "s", first - started)
    section.add("chat-stream: CPU per warm turn", "ms", (done - first) / warm * 1000, note=f"{warm} turns")


def _report(section: Section, name: str, found: dict[str, float]) -> None:
    section.add(f"{name}: peak RSS once imported", "MiB", found["imported"])
    section.add(f"{name}: peak RSS at the end", "MiB", found["peak"])
    section.add(f"{name}: CPU of the work", "s", found["cpu"], note=f"wall {found['wall']:.2f} s")


def run(quick: bool = False) -> Section:
    section = Section("memory_use", packages=["pypdf", "rapidocr", "onnxruntime", "pocketsphinx", "chromadb"])
    layout = lambda_layout.prepare()
    stack = local.shared()
    for pages in PAGES:
        _report(section, f"ingest function, a {pages}-page PDF", _ingest(stack, layout, pages))
    _chat_stream_cpu(section, stack, layout, WARM_TURNS // 4 if quick else WARM_TURNS)
    for name, body in _attachment_bodies().items():
        _report(section, f"attachment {name}", _attachment(name, body))
    return section
