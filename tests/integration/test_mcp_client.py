"""Our MCP client (tools/mcp_client.py, no SDK) beside the official SDK's client, on the SDK's own
servers of both protocol generations: the same tools listed and the same outcome for every kind of
call; then what ours puts on the wire, and the cases only a scripted endpoint produces."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from rag_orchestrator.tools.mcp_client import McpClient
from rag_orchestrator.tools.mcp_exchange import AUTO, LEGACY, Connection, Listing, McpCallFailed
from tests.fakes.fake_mcp import FakeMcp, orders_server
from tests.fakes.loopback import serving
from tests.fakes.scripted_mcp import Reply, Request, ScriptedMcp, events_reply, json_reply, result
from tests.integration.mcp_clients import LIMIT, our_outcome, run, sdk_listing, sdk_outcome

pytestmark = pytest.mark.integration

MODERN = "2026-07-28"
CALLS = [
    ("lookup_order", {"orderId": "A-1001"}),
    ("regional_stock", {"region": "Zürich Nord "}),  # mirrored in a header: base64, not as it is
    ("broken_lookup", {}),
    ("no_such_tool", {}),
    ("confirm_address", {}),  # asks the client a question (elicitation)
    ("summarize_reviews", {}),  # asks for the client's model (sampling), which ours does not declare
    ("huge_export", {}),
]


@pytest.fixture(scope="module", params=["events", "json", "handshake"])
def served(request: pytest.FixtureRequest) -> Iterator[FakeMcp]:
    """The order service as a stateless server answering in event streams or in JSON, and as a
    stateful server of the 2025 protocol only."""
    kind = request.param
    app = orders_server().streamable_http_app(
        stateless_http=kind != "handshake", json_response=kind == "json"
    )
    with FakeMcp(app, legacy=kind == "handshake") as server:
        yield server


def test_the_same_tools_and_protocol_as_the_sdks_client(served: FakeMcp) -> None:
    tools, version = run(lambda: sdk_listing(served.url))
    listing = run(lambda: McpClient(max_response_bytes=LIMIT).list_tools(Connection(served.url, {}, 5.0)))
    assert [t.name for t in listing.tools] == tools and len(tools) >= 9
    assert listing.mode == (version if version == MODERN else LEGACY)
    assert listing.mode == (LEGACY if served.legacy else MODERN)
    lookup = next(t for t in listing.tools if t.name == "lookup_order")
    assert lookup.description.startswith("Look up the shipping status")
    assert lookup.input_schema["required"] == ["orderId"]


@pytest.mark.parametrize(("name", "arguments"), CALLS, ids=[c[0] for c in CALLS])
def test_every_kind_of_call_ends_as_with_the_sdks_client(served: FakeMcp, name: str, arguments: dict) -> None:
    expected = run(lambda: sdk_outcome(served.url, name, arguments))
    ours = run(lambda: our_outcome(served.url, name, arguments))
    if (
        name == "huge_export"
    ):  # 5 MB: ours stops at its limit; the SDK reads it, or fails on an event that size
        assert ours == ("too large",) and expected[0] in ("too large", "error")
        return
    assert ours == expected
    if name == "lookup_order":
        assert expected == ("result", "Order A-1001 is shipped", False)
    if name == "regional_stock":
        assert expected == ("result", "12 in stock in Zürich Nord ", False)


def test_on_the_wire_a_modern_call_is_one_request_with_its_headers(orders: FakeMcp) -> None:
    served = orders
    before = len(served.log)
    connection = Connection(served.url, {"X-Tenant": "t-1"}, 5.0, MODERN)
    run(lambda: McpClient(max_response_bytes=LIMIT).call_tool(connection, "lookup_order", {"orderId": "A-1"}))
    (sent,) = served.log[before:]
    assert sent["method"] == "tools/call" and sent["verb"] == "POST"
    assert sent["headers"] | {"user-agent": ""} == {
        "x-tenant": "t-1",
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": "lookup_order",
        "user-agent": "",
    }
    before = len(served.log)
    run(
        lambda: McpClient(max_response_bytes=LIMIT).call_tool(
            connection, "regional_stock", {"region": "Zürich"}
        )
    )
    refused, listed, called = served.log[before:]
    assert [refused["method"], listed["method"], called["method"]] == [
        "tools/call",
        "tools/list",
        "tools/call",
    ]
    assert "mcp-param-region" not in refused["headers"]
    assert (
        called["headers"]["mcp-param-region"]
        == "=?base64?" + base64.b64encode("Zürich".encode()).decode() + "?="
    )


def test_on_the_wire_the_handshake_is_a_session_of_its_own_deleted_beside_what_comes_next(
    stateful: FakeMcp,
) -> None:
    served = stateful
    before = len(served.log)
    connection = Connection(served.url, {"X-Tenant": "t-1"}, 5.0, LEGACY)

    async def call() -> int:
        client = McpClient(max_response_bytes=LIMIT)
        await client.call_tool(connection, "lookup_order", {"orderId": "A-1"})
        answered = len(served.log)  # the DELETE is not sent yet: the answer did not wait for it
        await client.settled()
        return answered

    answered = run(call)
    sent = served.log[before:]
    assert [(e["verb"], e["method"]) for e in sent] == [
        ("POST", "initialize"),
        ("POST", "notifications/initialized"),
        ("POST", "tools/call"),
        ("DELETE", None),
    ]
    assert answered == before + 3
    assert all(e["headers"]["x-tenant"] == "t-1" for e in sent)
    versions = [e["headers"].get("mcp-protocol-version") for e in sent]
    assert versions == [None, "2025-11-25", "2025-11-25", "2025-11-25"]


def test_a_call_longer_than_httpxs_own_default_timeout_gets_the_servers(orders: FakeMcp) -> None:
    """httpx cuts a request at 5 s unless told otherwise: the server's `timeoutSeconds` is what counts."""
    connection = Connection(orders.url, {}, 8.0, MODERN)
    client = McpClient(max_response_bytes=LIMIT)
    called = run(lambda: client.call_tool(connection, "slow_report", {"seconds": 5.5}))
    assert called.text == "report" and not called.is_error


# ---------------------------------------------------------------- cases of a scripted endpoint
CALLED = {"content": [{"type": "text", "text": "done"}], "isError": False}


def scripted(answer: Callable[[Request], Reply]) -> Any:
    return serving(ScriptedMcp(answer))


def call(url: str, mode: str = MODERN, limit: int = LIMIT) -> Any:
    client = McpClient(max_response_bytes=limit)
    return run(lambda: client.call_tool(Connection(url, {}, 3.0, mode), "find", {}))


def failure(url: str, mode: str = MODERN, limit: int = LIMIT) -> str:
    with pytest.raises(McpCallFailed) as failed:
        call(url, mode, limit)
    return failed.value.message


def test_an_answer_in_pieces_with_crlf_among_notifications_and_comments_is_read() -> None:
    def answer(request: Request) -> Reply:
        done = json.dumps(result(request, CALLED))
        return events_reply(
            ": keep-alive\n\n",
            'event: message\ndata: {"jsonrpc": "2.0", "method": "notifications/progress", "params": {}}\n\n',
            f"event: message\r\ndata: {done[:20]}",  # CR LF line ends, cut between the CR and the LF
            f"{done[20:]}\r",
            "\n\r\n",
        )

    with scripted(answer) as server:
        assert call(f"{server.url}/mcp").text == "done"


def test_a_batch_holding_the_answer_is_read() -> None:
    with scripted(
        lambda r: json_reply([{"jsonrpc": "2.0", "method": "notifications/x"}, result(r, CALLED)])
    ) as s:
        assert call(f"{s.url}/mcp").text == "done"


def test_a_servers_question_is_refused_with_the_sdks_words_and_the_answer_still_read() -> None:
    def answer(request: Request) -> Reply:
        if request.method == "tools/call":
            asked = {"jsonrpc": "2.0", "id": 7, "method": "roots/list"}
            return events_reply(
                f"data: {json.dumps(asked)}\n\n", f"data: {json.dumps(result(request, CALLED))}\n\n"
            )
        return Reply(202)

    with scripted(answer) as server:
        assert call(f"{server.url}/mcp").text == "done"
        reply = server.requests[-1].message
    assert reply == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {"code": -32600, "message": "List roots not supported"},
    }


def test_a_redirect_within_the_origin_is_followed_and_one_elsewhere_is_not() -> None:
    def answer(request: Request) -> Reply:
        if request.path == "/mcp":
            return Reply(307, {"location": "/mcp/"})
        return json_reply(result(request, CALLED))

    with (
        scripted(answer) as server,
        scripted(lambda r: Reply(307, {"location": f"{server.url}/mcp/"})) as other,
    ):
        assert call(f"{server.url}/mcp").text == "done"
        assert [r.path for r in server.requests] == ["/mcp", "/mcp/"]
        assert server.requests[-1].message["method"] == "tools/call"  # the body went along
        assert "(-32600): redirect not followed (307)" in failure(f"{other.url}/mcp")
        assert len(server.requests) == 2  # the other origin was never asked


def test_a_server_refusing_discovery_is_spoken_to_with_the_handshake() -> None:
    def answer(request: Request) -> Reply:
        match request.method:
            case "server/discover":
                return Reply(404, {"content-type": "text/plain"}, [b"not here"])
            case "initialize":
                return json_reply(
                    result(request, {"protocolVersion": "2025-06-18"}), **{"mcp-session-id": "s-1"}
                )
            case "tools/list":
                return json_reply(
                    result(request, {"tools": [{"name": "find", "inputSchema": {"type": "object"}}]})
                )
        return Reply(202)

    async def listed(url: str) -> Listing:
        client = McpClient(max_response_bytes=LIMIT)
        listing = await client.list_tools(Connection(url, {}, 3.0))
        await client.settled()
        return listing

    with scripted(answer) as server:
        listing = run(lambda: listed(f"{server.url}/mcp"))
    assert listing.mode == LEGACY and [t.name for t in listing.tools] == ["find"]
    sent = [
        (r.verb, r.method, r.headers.get("mcp-session-id"), r.headers.get("mcp-protocol-version"))
        for r in server.requests
    ]
    assert sent == [
        ("POST", "server/discover", None, MODERN),
        ("POST", "initialize", None, None),
        ("POST", "notifications/initialized", "s-1", "2025-06-18"),
        ("POST", "tools/list", "s-1", "2025-06-18"),
        ("DELETE", None, "s-1", "2025-06-18"),
    ]


@pytest.mark.parametrize(
    ("supported", "handshake"), [(["2099-01-01"], False), (["2099-01-01", "2025-06-18"], True)]
)
def test_a_modern_server_of_other_versions_only_is_not_asked_for_the_handshake(supported, handshake) -> None:
    def answer(request: Request) -> Reply:
        if request.method == "server/discover":
            error = {"code": -32022, "message": "unsupported", "data": {"supported": supported}}
            return json_reply({"jsonrpc": "2.0", "id": request.message["id"], "error": error}, 400)
        return json_reply(result(request, {"protocolVersion": "2099-01-01"}))

    with scripted(answer) as server:
        said = failure(f"{server.url}/mcp", AUTO)
    assert [r.method for r in server.requests] == ["server/discover", *(["initialize"] if handshake else [])]
    expected = (
        "Unsupported protocol version from the server: 2099-01-01" if handshake else "(-32022): unsupported"
    )
    assert expected in said


@pytest.mark.parametrize(
    ("reply", "says"),
    [
        (Reply(500, {"content-type": "text/html"}, [b"<h1>down</h1>"]), "answered with an error (-32603)"),
        (
            Reply(200, {"content-type": "text/plain"}, [b"hello"]),
            "(-32600): Unexpected content type: text/plain",
        ),
        (Reply(200, {"content-type": "application/json"}, [b'{"jsonrpc": "2.0", "id": 1, "res']), "(-32700)"),
        (
            Reply(200, {"content-length": "999999", "content-type": "application/json"}, [b"{}"]),
            "larger than 1000",
        ),
        (events_reply(*[": " + "x" * 300 + "\n\n"] * 10), "larger than 1000"),
        (events_reply('data: {"jsonrpc": "2.0", "method": "notifications/progress"}\n\n'), "(NoAnswer)"),
        (
            json_reply({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "input_required"}}),
            "asked for input",
        ),
    ],
    ids=[
        "bare 500",
        "not JSON-RPC",
        "cut JSON",
        "declared too large",
        "streamed too large",
        "stream ends",
        "input required",
    ],
)
def test_a_bad_answer_is_a_failure_in_words(reply: Reply, says: str) -> None:
    with scripted(lambda request: reply) as server:
        said = failure(f"{server.url}/mcp", limit=1000)
    assert says in said
    assert "down" not in said and "hello" not in said  # the server's page is not quoted


def test_a_tool_listed_with_an_invalid_header_annotation_is_left_out_on_the_current_protocol() -> None:
    bad = {"type": "object", "properties": {"x": {"type": "number", "x-mcp-header": "X"}}}  # numbers may not
    good = {"type": "object", "properties": {"x": {"type": "string", "x-mcp-header": "X"}}}

    def answer(request: Request) -> Reply:
        if request.method == "server/discover":
            return json_reply(result(request, {"supportedVersions": [MODERN], "capabilities": {}}))
        tools = [{"name": "bad", "inputSchema": bad}, {"name": "good", "inputSchema": good}]
        return json_reply(result(request, {"tools": tools}))

    with scripted(answer) as server:
        listing = run(
            lambda: McpClient(max_response_bytes=LIMIT).list_tools(Connection(f"{server.url}/mcp", {}, 3.0))
        )
    assert listing.mode == MODERN and [t.name for t in listing.tools] == ["good"]
