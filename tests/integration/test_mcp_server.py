"""POST /mcp: the knowledge base as an MCP server, driven by the official SDKs' clients (Python, and
TypeScript under node) over real HTTP.

The dev app serves it over a real Chroma server holding a small guide, the fake LLM answering `ask`.
Both protocol eras connect (the 2026 discover probe and the 2025 initialize handshake); a caller the
API refuses is refused here too; malformed JSON-RPC and unknown methods get JSON-RPC errors; and a
caller's conversation memory is never what /mcp finds.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime

import httpx
import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from rag_orchestrator.api.deps import process_aws
from rag_orchestrator.config import get_settings
from rag_orchestrator.retrieval.embedders import create_embedder
from rag_orchestrator.retrieval.fragments import conversation_fragments, create_fragment_index
from tests.fakes.llm_script import text_reply
from tests.integration.served import run_node

pytestmark = pytest.mark.integration

ALICE = {"X-Caller-Id": "mcp-alice"}
JSON_RPC = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def client(url: str, headers: dict[str, str] | None = ALICE, mode: str = "auto") -> Client:
    http = httpx2.AsyncClient(headers=headers or {})
    return Client(streamable_http_client(f"{url}/mcp", http_client=http), mode=mode)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_an_mcp_client_lists_searches_and_asks(dev_app, mode):
    dev_app.llm.script(text_reply("Run the suite with make test [source:guide#0].", chunks=2))
    async with client(dev_app.url, mode=mode) as mcp:
        assert mcp.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
        tools = {tool.name: tool for tool in (await mcp.list_tools()).tools}
        assert set(tools) == {"search_knowledge_base", "ask"}
        assert tools["search_knowledge_base"].input_schema["required"] == ["query"]
        assert set(tools["search_knowledge_base"].input_schema["properties"]) == {
            "query",
            "maxResults",
            "source",
            "tags",
        }

        found = await mcp.call_tool(
            "search_knowledge_base", {"query": "how do I run the suite", "maxResults": 1}
        )
        assert not found.is_error
        (passage,) = found.structured_content["results"]
        assert passage["documentId"] == "guide" and "make test" in passage["text"]

        answered = await mcp.call_tool("ask", {"question": "How do I run the suite?"})
        assert not answered.is_error
        assert answered.structured_content["answer"].startswith("Run the suite with make test")
        assert answered.structured_content["sources"][0]["documentId"] == "guide"
        assert "Sources:\n- [source:guide#0] Guide" in answered.content[0].text

        wrong = await mcp.call_tool("search_knowledge_base", {"query": "", "topK": 3})
        assert wrong.is_error and "Invalid arguments" in wrong.content[0].text


def test_the_typescript_sdks_client_lists_searches_and_asks(dev_app):
    dev_app.llm.script(text_reply("Run the suite with make test [source:guide#0].", chunks=2))
    seen = run_node("mcp_client.mjs", dev_app.url, "mcp-alice", "How do I run the suite?")
    assert seen["protocol"].startswith("2025-")  # this SDK's client knows only the handshake's protocols
    assert seen["tools"] == [
        {"name": "search_knowledge_base", "required": ["query"]},
        {"name": "ask", "required": ["question"]},
    ]
    assert not seen["found"]["isError"]
    (passage,) = seen["found"]["structured"]["results"]
    assert passage["documentId"] == "guide" and "make test" in passage["text"]
    assert not seen["answered"]["isError"]
    assert seen["answered"]["structured"]["answer"].startswith("Run the suite with make test")
    assert "Sources:\n- [source:guide#0] Guide" in seen["answered"]["content"][0]["text"]
    assert (
        seen["unknown"]["isError"] and seen["unknown"]["content"][0]["text"] == "Unknown tool: no_such_tool"
    )


async def test_a_caller_the_api_refuses_is_refused(dev_app):
    with pytest.raises(ExceptionGroup) as refused:  # the SDK's task group, around the HTTP error
        async with client(dev_app.url, headers=None) as mcp:
            await mcp.list_tools()
    assert refused.group_contains(MCPError, match="Server returned an error response")


def test_the_refusal_is_the_apis_401(dev_app):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    refused = httpx.post(f"{dev_app.url}/mcp", json=body, headers=JSON_RPC)
    assert refused.status_code == 401 and refused.json()["error"] == "Unauthorized"
    reserved = httpx.post(f"{dev_app.url}/mcp", json=body, headers={**JSON_RPC, "X-Caller-Id": "guest:x"})
    assert reserved.status_code == 401


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ('{"jsonrpc": "2.0", "id": 7, "method": "resources/destroy", "params": {}}', 200, -32601),
        ("{not json", 400, -32700),
        ('{"id": 1, "method": "tools/list"}', 400, -32602),
        ("[1, 2]", 400, -32602),
    ],
)
def test_malformed_json_rpc_and_unknown_methods_get_json_rpc_errors(dev_app, body, status, code):
    answered = httpx.post(f"{dev_app.url}/mcp", content=body, headers={**JSON_RPC, **ALICE})
    assert answered.status_code == status
    assert answered.json()["jsonrpc"] == "2.0" and answered.json()["error"]["code"] == code


def test_what_is_not_a_json_rpc_post_gets_the_apis_errors(dev_app):
    text = httpx.post(
        f"{dev_app.url}/mcp", content="tools/list", headers={**ALICE, "Content-Type": "text/plain"}
    )
    assert text.status_code == 415 and text.json()["error"] == "Unsupported media type"
    assert httpx.get(f"{dev_app.url}/mcp", headers=ALICE).status_code == 405


async def test_conversation_memory_never_reaches_mcp(dev_app):
    secret = f"the vault code is {uuid.uuid4().hex[:8]}"
    fragments = conversation_fragments(
        conversation_id="c-bob",
        caller_id="mcp-alice",  # the very caller asking: still only the knowledge base answers
        message_id="m1",
        question=f"remember that {secret}",
        answer=f"Noted: {secret}.",
        created_at=datetime.now(UTC),
    )
    embedder = create_embedder(get_settings(), process_aws())
    index = create_fragment_index(get_settings(), embedder)
    await asyncio.to_thread(index.add, fragments)
    vector = await asyncio.to_thread(embedder.embed, secret)
    assert any(
        secret in p.text for p in index.recall(vector, "mcp-alice", 2)
    )  # there for the caller's own turns
    async with client(dev_app.url) as mcp:
        found = await mcp.call_tool("search_knowledge_base", {"query": secret})
    assert not found.is_error
    results = found.structured_content["results"]
    assert all(r["documentId"] == "guide" and secret not in r["text"] for r in results)
