"""One way of wiring AWS: the composition roots make the clients (one boto3 session each) and hand them
down; nothing in the core package makes a session or keeps clients of its own in a module."""

from __future__ import annotations

import re
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "layers" / "core" / "rag_orchestrator"
FUNCTIONS = Path(__file__).resolve().parents[2] / "functions"
ROOT = "api/deps.py"
MAKES_CLIENTS = re.compile(r"AwsClients\(\)|boto3\.(session\.Session|client|resource)\(")


def modules_making_clients() -> set[str]:
    return {
        str(path.relative_to(CORE))
        for path in CORE.rglob("*.py")
        if path.name != "aws.py" and MAKES_CLIENTS.search(path.read_text())
    }


def test_aws_clients_are_made_by_the_composition_roots_only():
    assert modules_making_clients() == {ROOT}
    for app in FUNCTIONS.glob("*/app.py"):  # each function's root makes its own, or builds the API's
        assert "AwsClients()" in app.read_text() or "create_app(" in app.read_text(), app


def test_the_aws_and_ssm_modules_keep_no_cache_of_their_own():
    for name in ("aws.py", "ssm_params.py"):
        assert not re.search(r"lru_cache|@cache\b|\bglobal ", (CORE / name).read_text()), name
