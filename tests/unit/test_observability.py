"""Log levels as a deployment sets them: TRACE (by name or as 5) shows the reasoning audit lines."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rag_orchestrator.observability import redacted

CORE = Path(__file__).resolve().parents[2] / "layers" / "core"
SCRIPT = "from rag_orchestrator.observability import audit_thinking\naudit_thinking('sanitized thought')\n"


def audit_lines(**env: str) -> list[str]:
    environ = {k: v for k, v in os.environ.items() if "LOG_LEVEL" not in k} | env | {"PYTHONPATH": str(CORE)}
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=environ, capture_output=True, text=True, check=True
    )
    return [line for line in out.stdout.splitlines() if "[thinking][audit]" in line]


@pytest.mark.parametrize(
    ("env", "shown"),
    [
        ({"LOG_LEVEL": "TRACE"}, True),
        ({"LOG_LEVEL": "5"}, True),
        ({"POWERTOOLS_LOG_LEVEL": "TRACE"}, True),
        ({"LOG_LEVEL": "DEBUG"}, False),
        ({}, False),
    ],
)
def test_trace_shows_the_reasoning_audit_and_nothing_above_it_does(env, shown):
    lines = audit_lines(**env)
    assert bool(lines) is shown
    assert all('"level":"TRACE"' in line for line in lines)


def test_upstream_text_is_logged_on_one_line_without_keys_and_truncated():
    text = "bad key sk-abcdef123456 and\nAuthorization: Bearer eyJhbGciOi.xyz and my-own-secret " + "x" * 500
    logged = redacted(text, "my-own-secret")
    assert "sk-abcdef123456" not in logged and "eyJhbGciOi" not in logged and "my-own-secret" not in logged
    assert "\n" not in logged and len(logged) == 300 and logged.count("[redacted]") == 3
