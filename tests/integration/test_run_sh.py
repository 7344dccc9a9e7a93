"""functions/chat_stream/run.sh starts the streaming app the way the Lambda Web Adapter expects."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from urllib.error import HTTPError
from urllib.request import Request, urlopen

import pytest

from devserver.stack import ROOT, free_port, wait_http
from rag_orchestrator.api.guest_tokens import issue_guest_token
from rag_orchestrator.config import load_settings

pytestmark = pytest.mark.integration


def test_run_sh_serves_the_stream_app_on_the_adapter_port(tmp_path):
    port = free_port()
    env = {
        "PATH": os.pathsep.join(
            [os.path.dirname(sys.executable), os.environ["PATH"]]
        ),  # `python` as on Lambda
        "HOME": str(tmp_path),
        "LAMBDA_TASK_ROOT": str(ROOT / "functions" / "chat_stream"),
        # Lambda puts the layer at /opt/python (run.sh adds it); here the layer's source stands in.
        "PYTHONPATH": str(ROOT / "layers" / "core"),
        "AWS_LWA_PORT": str(port),
        "PORT": "1",  # the adapter's own variable wins over PORT
        "AUTH_MODE": "jwt",
        "JWT_ISSUER": "https://issuer.example.com",
        "CONVERSATION_STORAGE": "memory",
        "MODEL_STRATEGY": "extractive",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "CHROMA_URL": "http://127.0.0.1:9",  # nothing there: the answer fails, and says so in metrics
        "AWS_LAMBDA_FUNCTION_NAME": "rag-orchestrator-ChatStreamFunction",
        "ALLOW_ANONYMOUS": "true",  # the answer routes serve guests
        "GUEST_TOKEN_SECRET": GUEST_SECRET,  # required with guests in Lambda
    }
    log = (tmp_path / "run.log").open("w")
    process = subprocess.Popen(
        ["bash", str(ROOT / "functions" / "chat_stream" / "run.sh")],
        cwd=tmp_path,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        wait_http(f"http://127.0.0.1:{port}/api/v1/agent/ping", timeout=60, process=process)
        with urlopen(f"http://127.0.0.1:{port}/openapi.json", timeout=10) as response:
            paths = json.loads(response.read())["paths"]
        assert "/api/v1/chat/conversations/{conversation_id}/messages/stream" in paths
        assert "/api/v1/chat/conversations" not in paths  # REST routes live in the API function
        answered = [adapter_request(port, f"req-{n}") for n in (1, 2)]
        assert answered == [(503, "url-req-1"), (503, "url-req-2")]
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
        process.wait(15)
        log.close()
    lines = [
        json.loads(line) for line in (tmp_path / "run.log").read_text().splitlines() if line.startswith("{")
    ]
    failed = [line for line in lines if line.get("message") == "request failed"]
    assert [(f["function_request_id"], f["cold_start"]) for f in failed] == [
        ("req-1", True),
        ("req-2", False),
    ]
    assert {f["function_name"] for f in failed} == {"rag-orchestrator-ChatStreamFunction"}
    assert [f["correlation_id"] for f in failed] == ["url-req-1", "url-req-2"]
    emf = [line for line in lines if "_aws" in line]  # the metrics of each request, flushed after it
    assert [m.get("AnswerFailures") for m in emf] == [[1.0], [1.0]]
    assert emf[0]["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "RagOrchestrator"


GUEST_SECRET = "run-sh-test-secret-of-32-characters!"


def adapter_request(port: int, request_id: str) -> tuple[int, str]:
    """A guest's streamed answer as the Lambda Web Adapter forwards it: with the invocation's context
    headers."""
    token, _ = issue_guest_token(load_settings(guest_token_secret=GUEST_SECRET))
    lambda_context = {
        "request_id": request_id,
        "deadline": 4102444800000,
        "invoked_function_arn": "arn:aws:lambda:us-east-1:123456789012:function:rag-orchestrator-ChatStreamFunction",
        "xray_trace_id": None,
        "env_config": {"function_name": "rag-orchestrator-ChatStreamFunction", "memory": 1024},
    }
    request = Request(
        f"http://127.0.0.1:{port}/api/v1/query/answer/stream",
        data=json.dumps({"query": "anything"}).encode(),
        headers={
            "content-type": "application/json",
            "authorization": f"Bearer {token}",
            "x-amzn-lambda-context": json.dumps(lambda_context),
            "x-amzn-request-context": json.dumps({"requestId": f"url-{request_id}"}),
        },
        method="POST",
    )
    try:
        with urlopen(request, timeout=30) as response:
            return response.status, response.headers["x-request-id"]
    except HTTPError as error:
        return error.code, error.headers["x-request-id"]
