"""functions/chat_stream/run.sh starts the streaming app the way the Lambda Web Adapter expects."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from urllib.request import urlopen

import pytest

from devserver.stack import ROOT, free_port, wait_http

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
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
        process.wait(15)
        log.close()
