"""`dev_app`: the dev server's app on a loopback port, as `make dev` serves it — chat page, demo tools
(HTTP and MCP) and every route — over a real Chroma server holding a small guide, with the fake LLM as its model
(or, parametrized indirectly with "extractive", the offline strategy)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from devserver.demo_mcp import use_demo_mcp
from devserver.demo_tools import CATALOG, MOUNT
from devserver.stack import free_port
from rag_orchestrator.tools.assertion import generate_key_pem
from tests.fakes.fake_llm import FakeLLM
from tests.fakes.fake_mcp import FakeMcp, orders_server
from tests.integration.served import serve_dev_app

DEV_KEY = generate_key_pem()

GUIDE = (
    "The suite runs with make test on a fresh machine. It starts a moto server and a Chroma server.\n\n"
    "The dev server starts with make dev and listens on port 8000 by default."
)


@dataclass
class DevApp:
    url: str
    llm: FakeLLM

    def conversation_url(self, conversation_id: str, tail: str) -> str:
        return f"{self.url}/api/v1/chat/conversations/{conversation_id}/{tail}"


@pytest.fixture
def dev_app(request, chroma_url, fake_llm, monkeypatch) -> Iterator[DevApp]:
    from rag_orchestrator.config import get_settings
    from tests.integration.knowledge import ingest

    port = free_port()
    monkeypatch.setenv("CHROMA_COLLECTION", f"dev-app-{uuid.uuid4().hex[:8]}")
    monkeypatch.setenv("RAG_SIMILARITY_THRESHOLD", "0.05")
    monkeypatch.setenv("TOOL_CATALOG_PATH", str(CATALOG))
    monkeypatch.setenv("ASSERTION_PRIVATE_KEY", DEV_KEY)  # the key a test signs as the service with
    monkeypatch.setenv("DEMO_TOOLS_URL", f"http://127.0.0.1:{port}{MOUNT}")
    demo_mcp: dict[str, str] = {}
    use_demo_mcp(str(port), demo_mcp)
    monkeypatch.setenv("MCP_SERVERS", demo_mcp["MCP_SERVERS"])
    if getattr(request, "param", None) == "extractive":
        monkeypatch.setenv("MODEL_STRATEGY", "extractive")
    else:
        for key, value in fake_llm.settings_for("openai_compatible", model_max_retries=0).items():
            monkeypatch.setenv(key.upper(), str(value))
    get_settings.cache_clear()
    ingest(
        [{"documentId": "guide", "title": "Guide", "text": GUIDE, "source": "docs", "tags": ["dev"]}],
        get_settings(),
    )
    with serve_dev_app(port) as url:
        yield DevApp(url, fake_llm)


@pytest.fixture(scope="module")
def orders() -> Iterator[FakeMcp]:
    """The order service (tests/fakes/fake_mcp.py) as a stateless MCP server answering with SSE streams."""
    with FakeMcp(orders_server().streamable_http_app(stateless_http=True)) as server:
        yield server


@pytest.fixture(scope="module")
def stateful() -> Iterator[FakeMcp]:
    """The same service as a stateful server of the 2025 protocol only (initialize, sessions)."""
    with FakeMcp(orders_server().streamable_http_app(), legacy=True) as server:
        yield server
