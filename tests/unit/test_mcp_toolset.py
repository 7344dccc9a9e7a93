"""The tools of MCP servers as a process keeps them, over a scripted exchange (no network, no SDK):
listing once per TTL, checks on what a server lists, embedding once per listing, selection beside the
catalogue, the registry's lookups, and what a call sends and returns."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from rag_orchestrator.domain.messages import ToolCall
from rag_orchestrator.text.hashing import HashingEmbedder
from rag_orchestrator.tools.base import ToolContext
from rag_orchestrator.tools.mcp_endpoint import McpEndpoint
from rag_orchestrator.tools.mcp_exchange import CallOutcome, Connection, ListedTool, Listing, McpCallFailed
from rag_orchestrator.tools.mcp_servers import McpServer
from rag_orchestrator.tools.mcp_toolset import McpTools
from rag_orchestrator.tools.registry import ToolRegistry
from rag_orchestrator.tools.selection import Offer, ToolSelector

OBJECT = {"type": "object", "properties": {"q": {"type": "string"}}}
CTX = ToolContext(conversation_id="c1", caller_id="alice", roles=("user",), caller_token="tok-alice-1")


class Exchanges:
    """A scripted MCP server: what it lists, and the connections it was sent."""

    def __init__(self, tools: list[ListedTool], *, fail: bool = False, answer: str = "ok") -> None:
        self.tools = tools
        self.fail = fail
        self.answer = answer
        self.lists: list[Connection] = []
        self.calls: list[tuple[Connection, str, dict[str, Any]]] = []

    async def list_tools(self, connection: Connection) -> Listing:
        self.lists.append(connection)
        await asyncio.sleep(0)
        if self.fail:
            raise McpCallFailed("Could not reach the MCP server (ConnectError)")
        return Listing(tuple(self.tools), "2026-07-28")

    async def call_tool(self, connection: Connection, name: str, arguments: dict[str, Any]) -> CallOutcome:
        self.calls.append((connection, name, arguments))
        return CallOutcome(self.answer, False)


class CountingEmbedder(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.batches = 0

    def embed_batch(self, texts: list[str]) -> list[list[float]]:
        self.batches += 1
        return super().embed_batch(texts)


class Signer:
    async def assertion(self, ctx: ToolContext, *, audience: str, tool: str) -> str:
        return f"signed-{ctx.caller_id}-{audience}-{tool}"


def tool(name: str, description: str = "a tool", schema: Any = OBJECT) -> ListedTool:
    return ListedTool(name, description, schema)


def toolset(exchanges: Exchanges, embedder=None, *, taken=(), **server: Any) -> McpTools:
    config = McpServer.model_validate(
        {"name": "crm", "url": "https://crm.example.com/mcp", "identity": "none", **server}
    )

    async def client() -> Exchanges:
        return exchanges

    endpoint = McpEndpoint(config, client, default_timeout=30, assertions=Signer())
    return McpTools([endpoint], ttl_seconds=60, embedder=embedder, taken=taken, clock=lambda: 0.0)


async def test_concurrent_first_uses_list_once_and_the_ttl_keeps_the_listing():
    exchanges = Exchanges([tool("find")])
    tools = toolset(exchanges)
    await asyncio.gather(tools.refresh(), tools.refresh(), tools.refresh())
    await tools.refresh()
    assert len(exchanges.lists) == 1 and [t.name for t in tools.tools()] == ["crm__find"]
    tools.clock = lambda: 61.0
    await tools.refresh()
    assert len(exchanges.lists) == 2


async def test_what_cannot_be_offered_is_skipped_and_the_rest_kept(caplog):
    listed = [
        tool("find"),
        tool("find", "again"),
        tool("y" * 60),
        tool("with space"),
        tool("loose", schema={"type": "string"}),
        tool("broken", schema={"type": "object", "properties": 3}),
        tool("taken"),
        tool("hidden"),
        tool("kept", ""),
    ]
    tools = toolset(
        Exchanges(listed),
        taken=["crm__taken"],
        include=["find", "y" * 60, "with space", "loose", "broken", "taken", "kept"],
    )
    await tools.refresh()
    assert [t.name for t in tools.tools()] == ["crm__find", "crm__kept"]
    assert tools.get("crm__kept").description == "The kept tool of the crm service"
    skipped = [r for r in caplog.records if r.getMessage() == "mcp tool skipped"]
    assert len(skipped) == 6


async def test_a_server_that_cannot_be_listed_has_no_tools_until_it_is_tried_again(caplog):
    exchanges = Exchanges([tool("find")], fail=True)
    tools = toolset(exchanges)
    await tools.refresh()
    assert tools.tools() == [] and tools.offers() == []
    assert any(r.getMessage() == "mcp server left out" for r in caplog.records)
    exchanges.fail = False
    await tools.refresh()
    assert len(exchanges.lists) == 1  # not before the retry time
    tools.clock = lambda: 31.0
    await tools.refresh()
    assert [t.name for t in tools.tools()] == ["crm__find"]


async def test_a_listing_is_embedded_once_and_again_only_when_it_changes():
    embedder = CountingEmbedder()
    exchanges = Exchanges([tool("find", "find a customer record")])
    tools = toolset(exchanges, embedder)
    await tools.refresh()
    assert embedder.batches == 1 and set(tools.vectors()) == {"crm__find"}
    tools.clock = lambda: 100.0
    await tools.refresh()
    assert embedder.batches == 1  # listed again, unchanged: the same vectors
    exchanges.tools = [tool("find", "find a customer record by email")]
    tools.clock = lambda: 200.0
    await tools.refresh()
    assert embedder.batches == 2


async def test_selection_ranks_mcp_tools_beside_the_catalogue_and_offers_unembedded_ones_unranked():
    embedder = HashingEmbedder()
    tools = toolset(
        Exchanges([tool("invoice_lookup", "look up an unpaid invoice by number")]),
        embedder,
        contexts=["billing"],
    )
    catalogue = [
        Offer("weather", "weather — the weather forecast for a city"),
        Offer("rag_search", "", core=True),
    ]
    selector = ToolSelector(catalogue, embedder=embedder, top_k=1, more=tools)
    assert await selector.select("which invoice is unpaid?", "billing", ("user",)) == [
        "rag_search",
        "crm__invoice_lookup",
    ]
    assert await selector.select("the weather in Paris", "weather", ("user",)) == [
        "rag_search",
        "weather",
    ]
    assert [o.name for o in selector.visible(("user",))] == ["weather", "rag_search", "crm__invoice_lookup"]
    assert await selector.select("which invoice is unpaid?", None, ("anonymous",)) == []
    unembedded = toolset(Exchanges([tool("invoice_lookup")]), None)
    await unembedded.refresh()
    selector = ToolSelector(catalogue, embedder=embedder, top_k=1, more=unembedded)
    assert await selector.select("weather in Paris", None, ("user",)) == [
        "rag_search",
        "weather",
        "crm__invoice_lookup",
    ]


async def test_the_registry_finds_and_runs_mcp_tools_with_the_callers_identity():
    exchanges = Exchanges([tool("find")], answer="found for tok-alice-1 by signed-alice-x")
    service = {"authorization": "Bearer service-token"}  # for listings; a call sends the caller's
    tools = toolset(exchanges, identity="caller-token", approval=["find"], headers=service)
    registry = ToolRegistry([], more=tools)
    await tools.refresh()
    found = registry.get("crm__find")
    assert found is not None and found.approval_required
    assert [d["function"]["name"] for d in registry.definitions()] == ["crm__find"]
    call = ToolCall.model_validate({"id": "c", "function": {"name": "crm__find", "arguments": '{"q": "x"}'}})
    result = await registry.execute(call, CTX)
    assert result.success and result.result == "found for [redacted] by signed-alice-x"
    connection, name, arguments = exchanges.calls[0]
    assert (name, arguments) == ("find", {"q": "x"}) and connection.mode == "2026-07-28"
    assert (
        connection.headers["Authorization"] == "Bearer tok-alice-1"
        and "authorization" not in connection.headers
    )
    assert exchanges.lists[0].headers["authorization"] == "Bearer service-token"


async def test_an_assertion_is_signed_for_the_servers_origin_and_the_tool():
    exchanges = Exchanges([tool("find")])
    tools = toolset(exchanges, identity="assertion")
    await tools.refresh()
    await tools.get("crm__find").execute({}, CTX)
    headers = exchanges.calls[0][0].headers
    assert headers["X-Caller-Assertion"] == "signed-alice-https://crm.example.com-crm__find"
    assert "Authorization" not in headers and "X-Caller-Assertion" not in exchanges.lists[0].headers


async def test_a_call_needs_its_identity_and_time_left_in_the_turn():
    exchanges = Exchanges([tool("find")])
    tools = toolset(exchanges, identity="caller-token")
    await tools.refresh()
    found = tools.get("crm__find")
    no_token = await found.execute({}, ToolContext(conversation_id="c1", caller_id="bob"))
    assert not no_token.success and "caller's own sign-in token" in no_token.error
    late = await found.execute(
        {}, ToolContext(conversation_id="c1", caller_id="alice", caller_token="t", deadline=time.time() - 1)
    )
    assert not late.success and "no time left" in late.error
    assert exchanges.calls == []
