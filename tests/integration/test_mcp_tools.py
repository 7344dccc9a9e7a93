"""Tools from MCP servers through real turns: MCP servers built with the official SDKs (Python, and
TypeScript under node) on loopback, our MCP client, the fake LLM as the model (over HTTP, as any
OpenAI-compatible provider).

Each test shows what the model was offered, what the MCP server's log received (the call, its
arguments and the caller's identity headers), and what the model and the client read back. Bad
servers — down, hanging, answering nonsense or 5 MB, listing bad names, asking for input — cost a
tool or a failed tool result, never the turn.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import boto3
import httpx
import jwt
import pytest
from fastapi.testclient import TestClient
from mcp_types import Tool

from rag_orchestrator.api.app import create_app
from rag_orchestrator.api.deps import loop_config, process_aws
from rag_orchestrator.config import load_settings
from rag_orchestrator.conversations.in_process import InProcessStore
from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.domain.conversations import Conversation
from rag_orchestrator.domain.fences import blocks
from rag_orchestrator.errors import ConfigError
from rag_orchestrator.loop.deps import TurnDeps
from rag_orchestrator.loop.orchestrator import Orchestrator
from rag_orchestrator.loop.request import TurnRequest
from rag_orchestrator.loop.toolsets import tool_chooser
from rag_orchestrator.providers.strategies import create_strategy
from rag_orchestrator.text.hashing import HashingEmbedder
from rag_orchestrator.tools.mcp_servers import load_servers
from rag_orchestrator.tools.toolbox import build_toolbox
from tests.fakes.fake_llm import FakeLLM
from tests.fakes.fake_mcp import HUGE_BYTES, FakeMcp, odd_server, orders_server
from tests.fakes.llm_script import text_reply, tool_call_reply
from tests.fakes.node_mcp import NodeMcp
from tests.fakes.scripted import MemorySearchTool
from tests.fakes.sse import parse_sse

pytestmark = pytest.mark.integration

ALICE = Caller("alice", ("user",), token="alice-bearer-token-123")
ANONYMOUS = Caller("guest:1", ("anonymous",))
OBJECT = {"type": "object", "properties": {}}


def verified(app: TestClient, assertion: str, audience: str) -> dict[str, Any]:
    """The assertion's claims, verified as a tool server would: against the service's GET
    /.well-known/jwks.json, for its own origin, from the service's issuer, not expired."""
    keys = jwt.PyJWKSet.from_dict(app.get("/.well-known/jwks.json").json())
    key = keys[jwt.get_unverified_header(assertion)["kid"]]
    return jwt.decode(
        assertion,
        key.key,
        algorithms=["ES256"],
        audience=audience,
        issuer="rag-orchestrator",
        options={"require": ["exp", "iat", "sub", "aud", "iss", "jti"]},
    )


class Clock:
    """Monotonic time the test moves on, so a TTL passes without waiting for it."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Harness:
    """The real loop and toolbox over in-memory conversations, the fake LLM as the model."""

    def __init__(self, llm: FakeLLM, servers: list[dict[str, Any]], **env: Any) -> None:
        self.llm = llm
        self.settings = load_settings(
            conversation_storage="memory",
            loop_initial_rag=False,
            mcp_servers=json.dumps({"servers": servers}),
            **llm.settings_for("openai_compatible", model_max_retries=0),
            **env,
        )
        # The composition root's signer, whose public key the app serves (api/deps.py, api/jwks.py)
        self.app = TestClient(create_app(["jwks"], self.settings))
        services = self.app.app.state.services
        self.assertions = services.caller_assertions
        self.toolbox = build_toolbox(
            self.settings,
            rag_search=MemorySearchTool([]),
            embedder=HashingEmbedder(),
            cache=None,
            assertions=self.assertions,
            aws=services.aws,  # the root's: MCP servers' header secrets are read through them
            secrets=services.secrets,
        )
        self.clock = Clock()
        assert self.toolbox.mcp is not None
        self.toolbox.mcp.clock = self.clock
        self.store = InProcessStore()
        self.orchestrator = Orchestrator(
            TurnDeps(
                store=self.store,
                strategy=create_strategy(self.settings),
                tools=self.toolbox.registry,
                choose_tools=tool_chooser(self.toolbox.registry, self.toolbox.selector),
                config=loop_config(self.settings),
            )
        )

    async def turn(self, message: str, caller: Caller = ALICE, **kwargs: Any) -> tuple[str, list[Any]]:
        created = await self.store.create(Conversation(caller_id=caller.caller_id))
        request = TurnRequest(created.conversation_id, caller, message, **kwargs)
        turn = await self.orchestrator.begin(request)
        return created.conversation_id, [event async for event in turn.events()]

    async def decide(self, conversation_id: str, approval_id: str, decision: str) -> list[Any]:
        request = TurnRequest(conversation_id, ALICE, "")
        turn = await self.orchestrator.decide(request, approval_id, decision, None)  # type: ignore[arg-type]
        return [event async for event in turn.events()]

    def offered(self, index: int = 0) -> list[str]:
        return [tool["function"]["name"] for tool in self.llm.requests[index].get("tools", [])]

    def tool_message(self, index: int = 1) -> str:
        """The last tool result the model read, inside the turn's data fence (docs/security.md)."""
        content = next(
            m["content"] for m in reversed(self.llm.requests[index]["messages"]) if m["role"] == "tool"
        )
        (enclosed,) = blocks(content, "tool-result")
        return enclosed


def server(name: str, url: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "url": url, "identity": "none", **fields}


def of_type(events: list[Any], kind: str) -> list[Any]:
    return [event for event in events if event.type == kind]


def ends_well(events: list[Any]) -> None:
    assert events[-1].type == "Completed", events[-1]
    assert not of_type(events, "Error")


async def test_tools_are_listed_selected_and_called_with_the_callers_identity(orders, fake_llm):
    config = server("orders", orders.url, identity="assertion", contexts=["orders"])
    h = Harness(fake_llm, [config])
    fake_llm.script(
        tool_call_reply("orders__lookup_order", {"orderId": "A-1001"}), text_reply("A-1001 has shipped.")
    )
    conversation_id, events = await h.turn("Where is my order A-1001, has it shipped?", context_type="orders")

    ends_well(events)
    assert "orders__lookup_order" in h.offered()  # ranked with the catalogue's tools, among the top k
    result = of_type(events, "ToolCallResult")[0]
    assert result.success and result.result == "Order A-1001 is shipped"
    assert h.tool_message() == "Order A-1001 is shipped"  # what the model read back
    (call,) = orders.calls("lookup_order")
    assert call["arguments"] == {"orderId": "A-1001"}
    claims = verified(h.app, call["headers"]["x-caller-assertion"], audience=orders.base)
    assert claims["sub"] == "alice" and claims["tool"] == "orders__lookup_order"
    assert claims["conversationId"] == conversation_id and claims["roles"] == ["user"]
    assert 0 < claims["exp"] - time.time() <= 60
    assert "authorization" not in call["headers"]
    trail = await h.store.audit(conversation_id)  # audited like any tool
    (audited,) = trail.records[-1]["toolCalls"]
    assert audited["toolName"] == "orders__lookup_order" and audited["success"] and trail.chain_valid


@pytest.mark.parametrize("stateful", [True, False], ids=["stateful", "stateless"])
async def test_a_server_built_with_the_typescript_sdk_serves_a_turn_with_the_callers_identity(
    fake_llm, stateful
):
    with NodeMcp(stateful=stateful, json=not stateful) as orders_ts:
        h = Harness(fake_llm, [server("shop", orders_ts.url, identity="assertion")])
        fake_llm.script(
            tool_call_reply("shop__lookup_order", {"orderId": "A-1002"}), text_reply("It is being processed.")
        )
        conversation_id, events = await h.turn("Has my order A-1002 shipped yet?")

    ends_well(events)
    assert "shop__lookup_order" in h.offered()
    result = of_type(events, "ToolCallResult")[0]
    assert result.success and h.tool_message() == result.result == "Order A-1002 is processing"
    (call,) = orders_ts.calls("lookup_order")
    claims = verified(h.app, call["headers"]["x-caller-assertion"], audience=orders_ts.base)
    assert claims["sub"] == "alice" and claims["conversationId"] == conversation_id
    assert claims["tool"] == "shop__lookup_order"


async def test_the_listing_is_cached_for_its_ttl_and_its_tools_follow_roles_and_contexts(orders, fake_llm):
    config = server("orders", orders.url, roles=["admin"], contexts=["orders"])
    h = Harness(fake_llm, [config], mcp_tools_ttl_seconds=1)
    admin = Caller("root", ("admin",))
    listed = [t["name"] for t in await h.toolbox.listing(admin.roles)]
    assert {"orders__lookup_order", "orders__cancel_order"} <= set(listed)
    assert not any(
        name.startswith("orders__") for name in [t["name"] for t in await h.toolbox.listing(("user",))]
    )
    assert await h.toolbox.listing(("anonymous",)) == []
    lists = len([e for e in orders.log if e["method"] == "tools/list"])
    await h.toolbox.listing(admin.roles)  # within the TTL: no second listing
    assert len([e for e in orders.log if e["method"] == "tools/list"]) == lists
    fake_llm.script(text_reply("Nothing to look up."), text_reply("Nothing to look up."))
    await h.turn("where is order A-1001", caller=admin, context_type="billing")
    assert not any(name.startswith("orders__") for name in h.offered(0))  # not offered in that context
    h.clock.now += 1
    await h.turn("where is order A-1001", caller=admin, context_type="orders")
    assert "orders__lookup_order" in h.offered(1)
    assert len([e for e in orders.log if e["method"] == "tools/list"]) == lists + 1  # listed again


async def test_an_approval_tool_waits_for_the_decision_and_then_runs_once(orders, fake_llm):
    h = Harness(fake_llm, [server("orders", orders.url, approval=["cancel_order"])])
    fake_llm.script(tool_call_reply("orders__cancel_order", {"orderId": "A-1002"}))
    conversation_id, events = await h.turn("Please cancel order A-1002")
    (held,) = of_type(events, "ApprovalRequested")
    assert held.tool_name == "orders__cancel_order" and events[-1].finish_reason == "awaiting_approval"
    assert not orders.calls("cancel_order")
    fake_llm.script(text_reply("Order A-1002 is cancelled."))
    decided = await h.decide(conversation_id, held.approval_id, "approve")
    ends_well(decided)
    assert of_type(decided, "ToolCallResult")[0].result == "Order A-1002 is cancelled"
    assert len(orders.calls("cancel_order")) == 1
    listed = {t["name"]: t for t in await h.toolbox.listing(ALICE.roles)}
    assert listed["orders__cancel_order"]["approval"] == "required"
    assert listed["orders__lookup_order"]["approval"] is None


async def test_a_call_past_the_servers_timeout_is_a_failed_result(orders, fake_llm):
    h = Harness(fake_llm, [server("orders", orders.url, timeoutSeconds=1)])
    fake_llm.script(tool_call_reply("orders__slow_report", {"seconds": 5}), text_reply("The report is late."))
    _, events = await h.turn("Build the quarterly warehouse report")
    ends_well(events)
    result = of_type(events, "ToolCallResult")[0]
    assert not result.success and "did not answer within 1s" in result.result


async def test_the_callers_token_and_the_servers_secret_header_are_sent_and_never_read_back(
    orders, fake_llm, aws_stack
):
    ssm = boto3.client("ssm", endpoint_url=aws_stack["endpoint"])
    parameter = f"/rag-orchestrator/tools/orders-key-{uuid.uuid4().hex[:6]}"
    ssm.put_parameter(Name=parameter, Value="orders-secret-9876", Type="SecureString", Overwrite=True)
    secrets = boto3.client("secretsmanager", endpoint_url=aws_stack["endpoint"])
    secret = f"rag-orchestrator/tools/orders-{uuid.uuid4().hex[:6]}"
    secrets.create_secret(Name=secret, SecretString=json.dumps({"tenant": "tenant-4711"}))
    headers = {"X-Api-Key": f"key ${{ssm:{parameter}}}", "X-Tenant": f"${{secretsmanager:{secret}#tenant}}"}
    config = server("orders", orders.url, identity="caller-token", headers=headers)
    h = Harness(fake_llm, [config])
    fake_llm.script(
        tool_call_reply("orders__lookup_order", {"orderId": "alice-bearer-token-123"}), text_reply("done")
    )
    _, events = await h.turn("look up the order named like my token")
    ends_well(events)
    (call,) = [c for c in orders.calls("lookup_order") if c["arguments"]["orderId"].startswith("alice")]
    assert call["headers"]["authorization"] == "Bearer alice-bearer-token-123"
    assert call["headers"]["x-api-key"] == "key orders-secret-9876"  # read from SSM at first use
    assert call["headers"]["x-tenant"] == "tenant-4711"  # and a JSON secret's field from Secrets Manager
    assert of_type(events, "ToolCallResult")[0].result == "Order [redacted] is unknown"


async def test_a_server_that_is_down_leaves_its_tools_out_and_the_turn_goes_on(orders, fake_llm):
    down = FakeMcp(orders_server().streamable_http_app(stateless_http=True))  # not started yet
    h = Harness(fake_llm, [server("orders", orders.url), server("gone", down.url)], mcp_tools_ttl_seconds=1)
    fake_llm.script(text_reply("Here is what I know."))
    _, events = await h.turn("Where is my order A-1001?")
    ends_well(events)
    assert "orders__lookup_order" in h.offered() and not any(n.startswith("gone__") for n in h.offered())
    with down:  # back up: listed again at the next listing (here: after the 1 s TTL)
        h.clock.now += 1
        assert "gone__lookup_order" in [t["name"] for t in await h.toolbox.listing(ALICE.roles)]


async def test_a_stateful_server_of_the_handshake_protocol_is_called_and_its_questions_refused(
    stateful, fake_llm
):
    h = Harness(fake_llm, [server("legacy", stateful.url, timeoutSeconds=5)])
    fake_llm.script(
        tool_call_reply("legacy__lookup_order", {"orderId": "A-1002"}),
        tool_call_reply("legacy__confirm_address", {}),
        text_reply("A-1002 is being processed."),
    )
    _, events = await h.turn("Is my order A-1002 on its way? Also confirm my delivery address")
    ends_well(events)
    looked_up, asked = of_type(events, "ToolCallResult")
    assert looked_up.success and looked_up.result == "Order A-1002 is processing"
    assert not asked.success  # elicitation refused: the tool fails, the turn does not
    assert "initialize" in [e["method"] for e in stateful.log]


@pytest.mark.parametrize(
    ("tool", "arguments", "says"),
    [
        ("huge_export", {}, "larger than 65536 bytes"),
        ("broken_lookup", {}, "The MCP tool reported an error"),
        ("confirm_address", {}, "The MCP server answered with an error (-32600)"),  # elicitation refused
        ("summarize_reviews", {}, "The MCP server answered with an error (-32021)"),  # sampling: not declared
    ],
)
async def test_a_huge_failing_or_asking_tool_is_a_failed_tool_result(orders, fake_llm, tool, arguments, says):
    h = Harness(fake_llm, [server("orders", orders.url)], tool_selection_top_k=20)  # all offered
    fake_llm.script(tool_call_reply(f"orders__{tool}", arguments), text_reply("That did not work."))
    _, events = await h.turn("export every order, or look it up")
    ends_well(events)
    result = of_type(events, "ToolCallResult")[0]
    assert not result.success and says in result.result
    assert "database" not in result.result  # the server's own words reach the model only
    assert len(json.dumps(fake_llm.requests[1])) < HUGE_BYTES // 10


async def test_bad_listings_skip_bad_tools_and_bad_servers_cost_only_their_tools(orders, fake_llm):
    tools = [
        Tool(name="find", description="find a thing", input_schema=OBJECT),
        Tool(name="find", description="find it again", input_schema=OBJECT),  # listed twice
        Tool(name="x" * 70, description="too long a name", input_schema=OBJECT),
        Tool(name="has space", description="not a function name", input_schema=OBJECT),
        Tool(name="bad_schema", description="bad", input_schema={"type": "object", "properties": 3}),
    ]
    with FakeMcp(odd_server(tools).streamable_http_app(stateless_http=True, json_response=True)) as odd:
        h = Harness(
            fake_llm,
            [
                server("odd", odd.url),
                server("hangs", f"{orders.base}/hang", timeoutSeconds=1),
                server("garbage", f"{orders.base}/garbage"),
                server("orders", orders.url),
            ],
        )
        names = [t["name"] for t in await h.toolbox.listing(ALICE.roles)]
        assert [n for n in names if n.startswith("odd__")] == ["odd__find"]
        assert not any(n.startswith(("hangs__", "garbage__")) for n in names)
        fake_llm.script(tool_call_reply("odd__find", {}), text_reply("found"))
        _, events = await h.turn("find a thing")
        ends_well(events)
        assert of_type(events, "ToolCallResult")[0].result == "called find"


async def test_a_tool_whose_arguments_go_in_headers_too_is_called_after_a_listing_on_its_connection(
    orders, fake_llm
):
    h = Harness(fake_llm, [server("orders", orders.url)])
    fake_llm.script(tool_call_reply("orders__regional_stock", {"region": "eu"}), text_reply("12 in the EU."))
    before = len(orders.log)
    _, events = await h.turn("how many are in stock in the eu region")
    ends_well(events)
    assert of_type(events, "ToolCallResult")[0].result == "12 in stock in eu"
    # refused without its Mcp-Param header, the SDK lists the tool on the connection and calls again
    assert [e["method"] for e in orders.log[before:] if e["method"] != "server/discover"][-3:] == [
        "tools/call",
        "tools/list",
        "tools/call",
    ]


async def test_a_server_that_hangs_mid_stream_fails_the_call_not_the_turn(orders, fake_llm):
    h = Harness(fake_llm, [server("orders", orders.url, timeoutSeconds=1)])
    fake_llm.script(tool_call_reply("orders__live_tracking", {"orderId": "A-1"}), text_reply("no answer"))
    _, events = await h.turn("track the courier of order A-1 live")
    ends_well(events)
    result = of_type(events, "ToolCallResult")[0]
    assert not result.success and "did not answer within 1s" in result.result
    assert orders.calls("live_tracking")


async def test_anonymous_callers_are_offered_no_mcp_tools_and_nothing_is_listed(orders, fake_llm):
    h = Harness(fake_llm, [server("orders", orders.url)])
    before = len(orders.log)
    fake_llm.script(text_reply("Hello."))
    _, events = await h.turn("where is order A-1001", caller=ANONYMOUS)
    ends_well(events)
    assert h.offered() == [] and len(orders.log) == before


def test_make_devs_demo_mcp_tools_are_listed_called_and_approved_through_the_api(dev_app):
    """The demo server verifies each call's assertion against the dev server's key set and serves
    only the account its directory gives the caller (alice-<anything> is alice)."""
    caller = {"X-Caller-Id": "alice-mcp"}
    tools = httpx.get(f"{dev_app.url}/api/v1/agent/tools", headers=caller).json()["tools"]
    demo = {tool["name"]: tool for tool in tools if tool["name"].startswith("demo__")}
    assert set(demo) == {"demo__get_order_status", "demo__list_orders", "demo__cancel_order"}
    assert demo["demo__cancel_order"]["approval"] == "required"
    assert demo["demo__get_order_status"]["contexts"] == ["orders"]

    conversation = httpx.post(f"{dev_app.url}/api/v1/chat/conversations", json={}, headers=caller).json()
    stream = dev_app.conversation_url(conversation["conversationId"], "messages/stream")
    account = {"accountId": "acct-1001"}
    dev_app.llm.script(
        tool_call_reply("demo__get_order_status", {"orderId": "A-1001", **account}),
        text_reply("A-1001 has shipped with PostNL."),
    )
    body = {"message": "Where is my order A-1001?", "contextType": "orders", "context": account}
    events = parse_sse(httpx.post(stream, json=body, headers=caller, timeout=30).text)
    (result,) = [e.data for e in events if e.event == "ToolCallResult"]
    assert result["success"] and json.loads(result["result"])["carrier"] == "PostNL"
    assert events[-1].event == "Completed"

    dev_app.llm.script(tool_call_reply("demo__cancel_order", {"orderId": "A-1002", **account}))
    body = {"message": "Cancel order A-1002", "contextType": "orders", "context": account}
    events = parse_sse(httpx.post(stream, json=body, headers=caller, timeout=30).text)
    (held,) = [e.data for e in events if e.event == "ApprovalRequested"]
    dev_app.llm.script(text_reply("Order A-1002 is cancelled."))
    decide = dev_app.conversation_url(conversation["conversationId"], f"approvals/{held['approvalId']}")
    events = parse_sse(httpx.post(decide, json={"decision": "approve"}, headers=caller, timeout=30).text)
    (result,) = [e.data for e in events if e.event == "ToolCallResult"]
    assert result["success"] and json.loads(result["result"])["status"] == "cancelled"

    theirs = {"accountId": "acct-2002"}  # bob's: the model, or the request's context, names it
    dev_app.llm.script(tool_call_reply("demo__list_orders", theirs), text_reply("I cannot see those orders."))
    body = {"message": "List the orders of acct-2002", "contextType": "orders", "context": theirs}
    events = parse_sse(httpx.post(stream, json=body, headers=caller, timeout=30).text)
    (refused,) = [e.data for e in events if e.event == "ToolCallResult"]
    assert not refused["success"]
    assert "Account acct-2002 is not the caller's" in dev_app.llm.requests[-1]["messages"][-1]["content"]


def test_mcp_servers_is_read_from_an_ssm_parameter_or_an_s3_object(aws_stack):
    document = json.dumps({"servers": [{"name": "wiki", "url": "https://wiki.example.com/mcp"}]})
    ssm = boto3.client("ssm", endpoint_url=aws_stack["endpoint"])
    ssm.put_parameter(Name="/rag-orchestrator/mcp-servers", Value=document, Type="String", Overwrite=True)
    s3 = boto3.client("s3", endpoint_url=aws_stack["endpoint"])
    s3.put_object(Bucket=aws_stack["DOCUMENTS_BUCKET"], Key="config/mcp.json", Body=document.encode())
    for location in (
        "ssm:/rag-orchestrator/mcp-servers",
        f"s3://{aws_stack['DOCUMENTS_BUCKET']}/config/mcp.json",
    ):
        (server,) = load_servers(load_settings(mcp_servers=location), process_aws())
        assert server.name == "wiki" and server.identity == "assertion"
    with pytest.raises(ConfigError, match="MCP_SERVERS: cannot read ssm:/rag-orchestrator/none"):
        load_servers(load_settings(mcp_servers="ssm:/rag-orchestrator/none"), process_aws())
