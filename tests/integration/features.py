"""What the tests of titles, feedback and versions share: the app on the moto server, a real Chroma
server and the fake LLM over HTTP, and the calls they make."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from fastapi.testclient import TestClient

from rag_orchestrator.api.app import ALL_ROUTERS, create_app
from tests.fakes.fake_llm import FakeLLM
from tests.fakes.sse import SSEMessage, parse_sse

BASE = "/api/v1/chat/conversations"
ALICE = {"X-Caller-Id": "alice"}
BOB = {"X-Caller-Id": "bob"}
ADMIN = {"X-Caller-Id": "root", "X-Caller-Roles": "admin"}


def fresh_caller(roles: str | None = None) -> dict[str, str]:
    """A caller of this test alone: the moto server's table is shared by the whole session."""
    headers = {"X-Caller-Id": f"caller-{uuid.uuid4().hex[:12]}"}
    return headers | ({"X-Caller-Roles": roles} if roles else {})


def use_fake_llm(llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in llm.settings_for("openai_compatible", model_max_retries=0).items():
        monkeypatch.setenv(key.upper(), str(value))


def client(routers: tuple[str, ...] = ALL_ROUTERS) -> TestClient:
    """An app built from the environment as the test has set it."""
    return TestClient(create_app(routers))


def new_conversation(c: TestClient, headers: dict[str, str] = ALICE, **body: Any) -> str:
    response = c.post(BASE, json=body, headers=headers)
    assert response.status_code == 201, response.text
    return str(response.json()["conversationId"])


def sse(c: TestClient, path: str, body: Any = None, headers: dict[str, str] = ALICE) -> list[SSEMessage]:
    """A streamed turn read to its end (after-turn work included); a refusal fails the test."""
    with c.stream("POST", f"{BASE}/{path}", json=body, headers=headers) as response:
        text = "".join(response.iter_text())
    assert response.status_code == 200, text
    return parse_sse(text)


def ask(c: TestClient, cid: str, message: str, headers: dict[str, str] = ALICE) -> list[SSEMessage]:
    return sse(c, f"{cid}/messages/stream", {"message": message}, headers)


def transcript(
    c: TestClient, cid: str, headers: dict[str, str] = ALICE, **params: str
) -> list[dict[str, Any]]:
    response = c.get(f"{BASE}/{cid}/messages", params={"limit": "100", **params}, headers=headers)
    assert response.status_code == 200, response.text
    return list(response.json()["items"])


def assert_error(response: Any, status: int) -> dict[str, Any]:
    """A refusal with the error JSON."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) >= {"error", "message", "timestamp", "requestId"}
    return dict(body)
