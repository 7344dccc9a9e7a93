"""Every httpx client the package makes says what it verifies (`verify=`, tls.verify for its URL): httpx
otherwise reads the whole CA bundle into a new TLS context for each client, 40-90 ms of a cold start
each, even for a client that only speaks plain HTTP (rag_orchestrator/tls.py)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "layers" / "core" / "rag_orchestrator"


def clients_without_verify() -> tuple[list[str], int]:
    missing, found = [], 0
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            target = node.func
            if target.attr in ("Client", "AsyncClient") and getattr(target.value, "id", None) == "httpx":
                found += 1
                if not any(keyword.arg == "verify" for keyword in node.keywords):
                    missing.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    return missing, found


def test_every_httpx_client_is_given_what_it_verifies():
    missing, found = clients_without_verify()
    assert found >= 4  # the model's, Chroma's, the embedder's, AWS's JSON services'
    assert missing == []
