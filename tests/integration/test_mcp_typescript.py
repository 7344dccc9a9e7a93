"""Our MCP client on servers built with the official TypeScript SDK (tests/node/mcp_server.mjs), beside the
Python SDK's client on the same servers: a server written in the other SDK, stateful or stateless,
answering in event streams or JSON, lists the same tools and ends every kind of call the same way; a
stateful one sees the handshake's session opened, used and deleted."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from rag_orchestrator.tools.mcp_client import McpClient
from rag_orchestrator.tools.mcp_exchange import LEGACY, Connection
from tests.fakes.node_mcp import NodeMcp
from tests.integration.mcp_clients import LIMIT, our_outcome, run, sdk_listing, sdk_outcome

pytestmark = pytest.mark.integration

CALLS = [
    ("lookup_order", {"orderId": "A-1001"}),
    ("lookup_order", {"orderId": "Z-9"}),  # the tool's own error: a result marked as one
    ("regional_stock", {"region": "Zürich Nord"}),
    ("broken_lookup", {}),  # the tool throws: the SDK makes it an error result
    ("no_such_tool", {}),
    ("lookup_order", {}),  # arguments its schema refuses
]


@pytest.fixture(
    scope="module",
    params=[(True, False), (True, True), (False, False), (False, True)],
    ids=["stateful-events", "stateful-json", "stateless-events", "stateless-json"],
)
def served(request: pytest.FixtureRequest) -> Iterator[NodeMcp]:
    stateful, json = request.param
    with NodeMcp(stateful=stateful, json=json) as server:
        yield server


def test_the_same_tools_as_the_sdks_client_spoken_to_with_the_handshake(served: NodeMcp) -> None:
    tools, version = run(lambda: sdk_listing(served.url))
    listing = run(lambda: McpClient(max_response_bytes=LIMIT).list_tools(Connection(served.url, {}, 5.0)))
    assert [t.name for t in listing.tools] == tools == ["lookup_order", "regional_stock", "broken_lookup"]
    assert version.startswith("2025-")  # this SDK knows no later protocol: ours falls back to the handshake
    assert listing.mode == LEGACY
    lookup = listing.tools[0]
    assert lookup.description.startswith("Look up the shipping status")
    assert lookup.input_schema["required"] == ["orderId"]


@pytest.mark.parametrize(("name", "arguments"), CALLS, ids=[f"{c[0]}-{i}" for i, c in enumerate(CALLS)])
def test_every_kind_of_call_ends_as_with_the_sdks_client(served: NodeMcp, name: str, arguments: dict) -> None:
    expected = run(lambda: sdk_outcome(served.url, name, arguments))
    assert run(lambda: our_outcome(served.url, name, arguments)) == expected
    if arguments == {"orderId": "A-1001"}:
        assert expected == ("result", "Order A-1001 is shipped", False)
    if name == "regional_stock":
        assert expected == ("result", "12 in stock in Zürich Nord", False)
    if arguments == {"orderId": "Z-9"}:
        assert expected == ("result", "No order Z-9", True)


def test_a_stateful_servers_session_is_opened_used_and_deleted() -> None:
    with NodeMcp(stateful=True, json=False) as served:
        client = McpClient(max_response_bytes=LIMIT)
        connection = Connection(served.url, {"X-Tenant": "t-1"}, 5.0, LEGACY)

        async def called() -> str:
            outcome = await client.call_tool(connection, "lookup_order", {"orderId": "A-1002"})
            await client.settled()  # the session's DELETE, sent once the answer was returned
            return outcome.text

        assert run(called) == "Order A-1002 is processing"
        deadline = time.monotonic() + 5
        while len(served.log) < 4 and time.monotonic() < deadline:
            time.sleep(0.02)  # the server's log is read from its output in a thread
        opened, initialized, call, deleted = served.log
        assert (opened["verb"], opened["method"]) == ("POST", "initialize")
        assert "mcp-session-id" not in opened["headers"] and opened["headers"]["x-tenant"] == "t-1"
        session = initialized["headers"]["mcp-session-id"]
        assert initialized["method"] == "notifications/initialized"
        assert call["method"] == "tools/call" and call["arguments"] == {"orderId": "A-1002"}
        assert call["headers"]["mcp-session-id"] == session
        assert call["headers"]["mcp-protocol-version"].startswith("2025-")
        assert (deleted["verb"], deleted["headers"]["mcp-session-id"]) == ("DELETE", session)
