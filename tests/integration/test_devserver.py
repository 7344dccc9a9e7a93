"""`make dev`'s stack as a newcomer starts it: health answers 200 with every part up, the README's sample
question is answered from the sample knowledge base, an attachment is read, the chat page and the demo
tools (HTTP and MCP) are there, every sample event runs with `make invoke` against it (on the stack's own
ports, none exported, and printing no warning); SIGTERM stops all."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from urllib.error import HTTPError
from urllib.request import Request, urlopen

import pytest

from devserver.stack import ROOT, free_port, wait_http
from tests.fakes.sse import parse_sse

pytestmark = pytest.mark.integration

# A Python warning as the warnings module prints it (`UserWarning: ...`, `...Warning: ...`). Log lines at
# WARNING are the app's own report of what happened (a slow hook on a loaded machine), not checked here.
WARNING = re.compile(r"\b\w*Warning: ")


# Every sample under events/, with what its run must show.
SAMPLES = [
    ("api", "events/api_health.json", '"statusCode": 200'),
    ("api", "events/api_create_conversation.json", '"statusCode": 201'),
    ("ingest", "events/s3_put.json", "uploaded events/objects/documents/guide.md"),
    ("chat_stream", "events/stream_turn.json", '"type":"Completed"'),
    ("archive", "events/schedule.json", '"stopped_early": false'),
    ("attachments", "events/s3_attachment.json", '"processed": ['),
]


def test_every_sample_event_is_listed():
    assert {sample for _, sample, _ in SAMPLES} == {
        str(p.relative_to(ROOT)) for p in (ROOT / "events").glob("*.json")
    }


def _children(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True).stdout
    return bool(state.strip()) and not state.startswith("Z")


def _post(url: str, body: dict, caller: str = "newcomer") -> dict:
    with urlopen(_request(url, body, caller), timeout=30) as response:
        return json.loads(response.read())


def _request(url: str, body: dict, caller: str = "newcomer") -> Request:
    return Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json", "X-Caller-Id": caller}
    )


def _ask_as_the_readme_shows(base: str, question: str) -> str:
    """A conversation, then one streamed turn (the README's curl lines); the streamed answer."""
    conversation = _post(f"{base}/api/v1/chat/conversations", {})["conversationId"]
    url = f"{base}/api/v1/chat/conversations/{conversation}/messages/stream"
    with urlopen(_request(url, {"message": question}), timeout=60) as response:
        messages = parse_sse(response.read().decode())
    assert messages[-1].event == "Completed", messages[-1]
    return "".join(m.data["content"] for m in messages if m.event == "ResponseChunk")


def read_an_attachment(base: str) -> None:
    """The README's walk-through: declare an attachment, POST the file to S3, poll until READY."""
    import httpx

    conversation = _post(f"{base}/api/v1/chat/conversations", {})["conversationId"]
    text = b"# Packing list\nRope, lamp and a spare battery."
    declared = {"fileName": "packing.md", "contentType": "text/markdown", "sizeBytes": len(text)}
    created = _post(f"{base}/api/v1/chat/conversations/{conversation}/attachments", declared)
    upload = created["upload"]
    sent = httpx.post(
        upload["url"], data=upload["fields"], files={"file": ("packing.md", text, "text/markdown")}
    )
    assert sent.status_code == 204, sent.text
    status_url = f"{base}/api/v1/chat/conversations/{conversation}/attachments/{created['attachmentId']}"
    for _ in range(300):  # the local S3 event reaches the app, which reads the file (bounded wait)
        shown = httpx.get(status_url, headers={"X-Caller-Id": "newcomer"}).json()
        if shown["status"] not in ("PENDING_UPLOAD", "PROCESSING"):
            break
        time.sleep(0.2)
    assert shown["status"] == "READY", shown
    assert shown["segments"] == [{"modality": "document", "index": 0, "chars": len(text)}]


def test_make_dev_stack_serves_health_answers_the_readme_question_reads_an_attachment_and_stops_every_child(
    tmp_path,
):
    port = free_port()
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(
            ("AWS_", "CHROMA_", "CONVERSATION", "TRANSCRIPTS", "DOCUMENTS", "ATTACHMENT", "MODEL_")
        )
    }
    env.update(
        PORT=str(port),
        CHROMA_URL=f"http://127.0.0.1:{free_port()}",
        AWS_ENDPOINT_URL=f"http://127.0.0.1:{free_port()}",
        DEVSERVER_LOCAL_DIR=str(tmp_path / "local"),
    )
    log = (tmp_path / "dev.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "devserver"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{base}/api/v1/agent/ping", timeout=120, process=process)
        with urlopen(f"{base}/api/v1/agent/health", timeout=10) as response:
            health = json.loads(response.read())
            assert response.status == 200, health
        assert {name: check["status"] for name, check in health["checks"].items()} == {
            "dynamodb": "UP",
            "s3": "UP",
            "chroma": "UP",
            "provider": "UP",
        }
        with urlopen(f"{base}/openapi.json", timeout=10) as response:
            assert json.loads(response.read())["info"]["title"] == "RAG Orchestrator"
        found = _post(f"{base}/api/v1/query", {"query": "How do I run the tests with make test?", "topK": 3})
        assert found["results"], "the sample knowledge base was not ingested"
        answer = _ask_as_the_readme_shows(base, "How do I run the tests?")
        assert answer.startswith("`make test`") and "[source:README.md#" in answer, answer
        assert "curl" not in answer, answer
        read_an_attachment(base)
        # The key caller assertions are signed with is kept under .local/ and published.
        from rag_orchestrator.tools.assertion import load_key

        kept = load_key((tmp_path / "local" / "assertion-key.pem").read_text())
        with urlopen(f"{base}/.well-known/jwks.json", timeout=10) as response:
            assert json.loads(response.read()) == {"keys": [kept.jwk]}
        with pytest.raises(HTTPError) as refused:  # the demo tool API answers no call without an assertion
            urlopen(f"{base}/demo-tools/accounts/acct-1001/orders", timeout=10)
        assert refused.value.code == 401
        with urlopen(f"{base}/", timeout=10) as response:
            assert b"<title>RAG Orchestrator" in response.read()
        tools = Request(f"{base}/api/v1/agent/tools", headers={"X-Caller-Id": "newcomer"})
        with urlopen(tools, timeout=60) as r:  # the first use lists the demo MCP server (and loads the SDK)
            listed = {tool["name"] for tool in json.loads(r.read())["tools"]}
        assert {"get_order_status", "demo__get_order_status"} <= listed  # the demo tools, HTTP and MCP
        # `make invoke` finds this stack's ports in its dev.env: none of them is exported.
        assert f"PORT={port}" in (tmp_path / "local" / "dev.env").read_text()
        invoke_env = {k: v for k, v in env.items() if k not in ("PORT", "CHROMA_URL", "AWS_ENDPOINT_URL")}
        for name, sample, expected in SAMPLES:
            done = subprocess.run(
                [sys.executable, "-m", "devserver.invoke", name, sample],
                cwd=ROOT,
                env=invoke_env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 0, (sample, done.stderr[-2000:])
            assert expected in done.stdout + done.stderr, (sample, done.stdout[-2000:], done.stderr[-2000:])
            assert f"against the running make dev on port {port}" in done.stderr
            warned = WARNING.findall(done.stdout + done.stderr)
            assert not warned, (sample, warned, done.stderr[-2000:])
        # each turn's spans reached the dev stack's OTLP receiver: kept in traces.jsonl, the tree printed
        traces, deadline = tmp_path / "local" / "traces.jsonl", time.monotonic() + 30
        while (
            '"invoke_agent"' not in (traces.read_text() if traces.exists() else "")
            and time.monotonic() < deadline
        ):
            time.sleep(0.2)
        names = {json.loads(line)["name"] for line in traces.read_text().splitlines()}
        assert {"invoke_agent", "chat extractive"} <= names, names
        assert "\ninvoke_agent  (" in (tmp_path / "dev.log").read_text()
        children = _children(process.pid)
        assert len(children) >= 2  # moto and chroma
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)
        log.close()
    deadline = time.monotonic() + 15
    while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [pid for pid in children if _alive(pid)], (tmp_path / "dev.log").read_text()[-2000:]
    assert not (tmp_path / "local" / "dev.env").exists()  # a stopped stack leaves nothing to invoke against
