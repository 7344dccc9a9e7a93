"""`python -m rag_orchestrator.cli chat` against the served dev app: answer on stdout, progress on
stderr, exit status per outcome; it imports nothing heavy."""

from __future__ import annotations

import os
import subprocess
import sys

import httpx
import pytest

from devserver.stack import ROOT
from tests.fakes.llm_script import error_reply, text_reply, tool_calls_reply

pytestmark = pytest.mark.integration

ANSWER = "Order A-1001 has shipped [source:guide#0]."


def cli(*args: str, stdin: str = "", port: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "layers" / "core")}
    env.pop("RAG_URL", None)
    env.pop("PORT", None)
    if port is not None:
        env["PORT"] = port
    return subprocess.run(
        [sys.executable, "-m", "rag_orchestrator.cli", "chat", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=ROOT,
    )


def test_a_turn_streams_the_answer_with_tool_progress_and_sources(dev_app):
    dev_app.llm.script(
        tool_calls_reply([("get_order_status", {"orderId": "A-1001"}, "call_1")]),
        text_reply(ANSWER, chunks=4),
    )
    done = cli(
        "--url", dev_app.url, "--caller-id", "alice", "--claims", '{"accountId": "acct-1001"}',
        "Where is my order A-1001? How do I run the tests?",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == ANSWER + "\n"
    err = done.stderr.splitlines()
    assert err[0].startswith("conversation ")
    assert "… Searching the knowledge base" in err
    assert any(line.startswith('⚙ get_order_status {"orderId": "A-1001"}') for line in err)
    assert any(line.startswith("✓ get_order_status →") and "shipped" in line for line in err)
    assert "[1] Guide (guide#0)" in err
    assert err[-1].startswith("— 2 model call(s)")
    cid = err[0].removeprefix("conversation ")
    stored = httpx.get(dev_app.conversation_url(cid, "messages"), headers={"X-Caller-Id": "alice"}).json()
    assert stored["items"][-1]["content"] == ANSWER


def test_lines_on_stdin_are_turns_of_one_conversation_on_the_dev_servers_port(dev_app):
    """No --url: the dev server's PORT, as `make dev` reads it; the caller it acted as is said."""
    dev_app.llm.script(text_reply("First."), text_reply("Second."))
    port = dev_app.url.rsplit(":", 1)[1]
    done = cli("--caller-id", "bob", stdin="hello\n\nagain\n", port=port)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "First.\nSecond.\n"
    assert done.stderr.splitlines()[1] == f"caller bob (X-Caller-Id header) at {dev_app.url}"
    listed = httpx.get(f"{dev_app.url}/api/v1/chat/conversations", headers={"X-Caller-Id": "bob"}).json()
    assert len(listed["items"]) == 1 and listed["items"][0]["messageCount"] == 4
    assert listed["items"][0]["memory"] is True


def test_temporary_starts_a_chat_that_remembers_nothing(dev_app):
    dev_app.llm.script(text_reply("Noted."))
    done = cli("--url", dev_app.url, "--caller-id", "carol", "--temporary", "My code is 4711.")
    assert done.returncode == 0, done.stderr
    cid = done.stderr.splitlines()[0].removeprefix("conversation ")
    read = httpx.get(f"{dev_app.url}/api/v1/chat/conversations/{cid}", headers={"X-Caller-Id": "carol"})
    assert read.json()["memory"] is False
    remembered = httpx.get(f"{dev_app.url}/api/v1/memory", headers={"X-Caller-Id": "carol"}).json()
    assert remembered["items"] == []


def test_exit_status_says_how_a_turn_ended(dev_app):
    dev_app.llm.script(error_reply(500, "upstream exploded"))
    failed = cli("--url", dev_app.url, "--caller-id", "alice", "hello")
    assert failed.returncode == 1 and failed.stdout == ""
    assert failed.stderr.splitlines()[-1].startswith("error: ") and "Traceback" not in failed.stderr
    unknown = cli("--url", dev_app.url, "--conversation", "00000000-0000-4000-8000-000000000000", "hi")
    assert unknown.returncode == 2
    assert "HTTP 404 Conversation not found" in unknown.stderr
    unreachable = cli("--url", "http://127.0.0.1:9", "hi")
    assert unreachable.returncode == 2 and "cannot reach http://127.0.0.1:9" in unreachable.stderr


def test_the_cli_imports_nothing_heavy():
    code = (
        "import sys, rag_orchestrator.cli; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'fastapi', 'pydantic', 'boto3', 'chromadb'}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "layers" / "core")},
        check=True,
    )
    assert done.stdout.strip() == "[]"
