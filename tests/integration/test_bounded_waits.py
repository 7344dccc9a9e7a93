"""Dependencies that stop answering: a turn goes on without them within their configured wait.

The Chroma server of the suite is paused for real (SIGSTOP; its listening socket still accepts
connections, so every request hangs rather than being refused) and resumed in teardown. A JWKS
address that accepts connections and never answers stands for a hung identity provider. The bound
on each request here (BOUND_SECONDS) is a guard against hanging, generous beside the configured
waits (1 s and 0.5 s here); the old fixed 30 s Chroma wait exceeds it.
"""

from __future__ import annotations

import os
import signal
import socket
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from fastapi.testclient import TestClient

from devserver.stack import Service
from rag_orchestrator.api.app import ALL_ROUTERS, create_app
from rag_orchestrator.config import load_settings
from tests.fakes.jwks_server import SigningKey
from tests.fakes.llm_script import text_reply
from tests.fakes.sse import parse_sse
from tests.integration.knowledge import ingest

pytestmark = pytest.mark.integration

ALICE = {"X-Caller-Id": "waits-alice"}
BOUND_SECONDS = 10.0


def within_bound[T](call: Callable[[], T]) -> T:
    """The call's result, or a failure when it has not returned within BOUND_SECONDS."""
    pool = ThreadPoolExecutor(1)
    try:
        return pool.submit(call).result(timeout=BOUND_SECONDS)
    finally:
        pool.shutdown(wait=False)  # a hung call finishes once the dependency is resumed


@pytest.fixture
def paused_chroma(app, chroma_server: Service) -> Iterator[None]:
    """Paused after the app's fixture has ingested the document."""
    os.killpg(chroma_server.process.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.killpg(chroma_server.process.pid, signal.SIGCONT)


@pytest.fixture
def app(aws_stack, chroma_url, fake_llm, monkeypatch) -> Iterator[TestClient]:
    monkeypatch.setenv("CHROMA_COLLECTION", f"waits-{id(monkeypatch)}")
    monkeypatch.setenv("CHROMA_TIMEOUT_SECONDS", "1")
    for key, value in fake_llm.settings_for("openai_compatible").items():
        monkeypatch.setenv(key.upper(), str(value))
    ingest([{"documentId": "guide", "title": "Guide", "text": "Run make test."}], load_settings())
    # One event loop for the client's life, as a server has: a request does not end by waiting for the
    # worker threads a paused Chroma holds (a new loop per request would, when it shuts down).
    with TestClient(create_app(ALL_ROUTERS)) as client:
        yield client


def test_a_paused_chroma_costs_a_turn_its_configured_wait_and_the_turn_answers(app, fake_llm, paused_chroma):
    fake_llm.script(text_reply("I could not search, but here is an answer."))
    cid = app.post("/api/v1/chat/conversations", json={}, headers=ALICE).json()["conversationId"]

    def turn() -> Any:
        path = f"/api/v1/chat/conversations/{cid}/messages/stream"
        with app.stream("POST", path, json={"message": "How do I run the tests?"}, headers=ALICE) as r:
            return parse_sse("".join(r.iter_text()))

    events = within_bound(turn)
    statuses = [e.data["status"] for e in events if e.event == "StatusUpdate"]
    assert statuses[:2] == ["Searching the knowledge base", "Knowledge base unavailable"]
    assert "".join(e.data["content"] for e in events if e.event == "ResponseChunk").startswith("I could not")
    assert events[-1].event == "Completed"

    response = within_bound(lambda: app.post("/api/v1/query", json={"query": "tests"}, headers=ALICE))
    assert response.status_code == 503 and response.headers["retry-after"] == "5"
    assert response.json()["message"] == "Chroma did not answer within 1 s; try again later"


@pytest.fixture
def silent_jwks() -> Iterator[str]:
    """A JWKS URL whose server accepts connections (the kernel's backlog) and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/.well-known/jwks.json"


def test_a_silent_identity_provider_is_a_503_within_the_configured_wait(silent_jwks, monkeypatch):
    monkeypatch.setenv("AUTH_MODE", "jwt")
    monkeypatch.setenv("JWT_ISSUER", "https://issuer.example.com")
    monkeypatch.setenv("JWT_JWKS_URL", silent_jwks)
    monkeypatch.setenv("JWKS_TIMEOUT_SECONDS", "0.5")
    client = TestClient(create_app(["conversations"]))
    token = SigningKey("k1").sign({"sub": "bob", "iss": "https://issuer.example.com", "exp": 4102444800})
    response = within_bound(
        lambda: client.get("/api/v1/chat/conversations", headers={"Authorization": f"Bearer {token}"})
    )
    assert response.status_code == 503, response.text
    assert response.headers["retry-after"] == "5"
    assert response.json()["error"] == "Identity provider unavailable"
    assert token not in response.text
