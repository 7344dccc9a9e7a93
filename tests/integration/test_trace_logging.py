"""LOG_LEVEL=TRACE as the template sets it (LogLevel parameter) switches the `[thinking][audit]` lines on:
the ApiFunction's handler in a fresh process with a deployed function's environment, a turn against
the moto server and a thinking model (the fake LLM), the log lines read from its stdout."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from devserver.lambda_env import lambda_environment
from devserver.stack import ROOT
from tests.fakes.llm_script import text_reply

pytestmark = pytest.mark.integration

REASONING = "The harbour guide says eight thousand"
SCRIPT = r"""
import json
from devserver.invoke import LambdaContext, load_handler_module

template = json.loads(open("events/api_create_conversation.json").read())

def event(path, body):
    request = json.loads(json.dumps(template))
    request["rawPath"] = request["requestContext"]["http"]["path"] = path
    request["body"] = json.dumps(body)
    request["headers"].pop("authorization")  # the authorizer's claims name the caller
    return request

handler = load_handler_module("api").handler
context = LambdaContext(function_name="rag-orchestrator-test-ApiFunction")
created = handler(event("/api/v1/chat/conversations", {}), context)
cid = json.loads(created["body"])["conversationId"]
answered = handler(event(f"/api/v1/chat/conversations/{cid}/messages", {"message": "Which port?"}), context)
print("STATUS", created["statusCode"], answered["statusCode"], flush=True)
"""


def run_handler(aws_stack: dict[str, str], fake_llm, log_level: str) -> list[str]:
    fake_llm.script(text_reply("Port 8000.", reasoning=REASONING))
    env = lambda_environment(str(ROOT / "functions" / "api"), "ApiFunction") | {
        "LOG_LEVEL": log_level,
        "PYTHONPATH": f"{ROOT / 'layers' / 'core'}:{ROOT}",
        "AWS_ENDPOINT_URL": aws_stack["endpoint"],
        "CONVERSATIONS_TABLE": aws_stack["CONVERSATIONS_TABLE"],
        "TRANSCRIPTS_BUCKET": aws_stack["TRANSCRIPTS_BUCKET"],
        "MODEL_STRATEGY": "qwen_single_thinking",
        "QWEN_BASE_URL": fake_llm.url,
        "QWEN_API_KEY": "sk-test",
        "LOOP_INITIAL_RAG": "false",
        "POWERTOOLS_METRICS_DISABLED": "true",
    }
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "STATUS 201 200" in done.stdout, done.stdout + done.stderr
    return done.stdout.splitlines()


def test_log_level_trace_emits_the_thinking_audit_line(aws_stack, fake_llm):
    lines = run_handler(aws_stack, fake_llm, "TRACE")
    audits = [json.loads(line) for line in lines if "[thinking][audit]" in line]
    assert len(audits) == 1, lines
    (line,) = audits
    assert line["level"] == "TRACE" and line["service"] == "rag-orchestrator"
    assert line["message"] == f"[thinking][audit] {REASONING}"
    assert (line["strategy"], line["iteration"]) == ("qwen_single_thinking", 1)


def test_below_trace_the_line_is_not_written(aws_stack, fake_llm):
    lines = run_handler(aws_stack, fake_llm, "DEBUG")
    assert not [line for line in lines if "[thinking][audit]" in line]
