"""HTTP tools through the real loop: a 30-tool catalogue against the fake tool API on loopback.

A scripted strategy plays the model, so every test shows what the loop offered, what it called and
what the model and the client received. The last tests go through the app (SSE and the tools list).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
import yaml
from fastapi.testclient import TestClient

from rag_orchestrator.api.app import create_app
from rag_orchestrator.api.deps import loop_config
from rag_orchestrator.config import load_settings
from rag_orchestrator.conversations.in_process import InProcessStore
from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.domain.conversations import Conversation
from rag_orchestrator.domain.fences import blocks
from rag_orchestrator.domain.messages import Role
from rag_orchestrator.loop.deps import TurnDeps
from rag_orchestrator.loop.orchestrator import Orchestrator
from rag_orchestrator.loop.prompts import PREVIEW_NOTE, ROLE_BLOCKS
from rag_orchestrator.loop.request import TurnRequest
from rag_orchestrator.loop.toolsets import tool_chooser
from rag_orchestrator.text.hashing import HashingEmbedder
from rag_orchestrator.tools.index_cache import PREFIX
from rag_orchestrator.tools.toolbox import build_toolbox
from tests.fakes.fake_tool_api import FakeToolAPI
from tests.fakes.scripted import MemorySearchTool, ScriptedStrategy, answer, call, tool_calls

pytestmark = pytest.mark.integration

CATALOG_30 = Path(__file__).resolve().parents[1] / "data" / "tool_catalog_30.yaml"
TOKEN = "tool-token-123456"
ALICE = Caller("alice", ("user",))
ADMIN = Caller("root", ("user", "admin"))
MODERATOR = Caller("mo", ("moderator",))
ANONYMOUS = Caller("anonymous", ("anonymous",))

# Five more tools that fail in each way the executor must survive, in a context of their own.
FAILING = [
    {
        "name": name,
        "description": f"diagnostics endpoint {path}",
        "contexts": ["diagnostics"],
        "inputSchema": {"type": "object", "properties": {}},
        "http": {"method": "GET", "url": "${TOOL_API_URL}" + path, **extra},
    }
    for name, path, extra in [
        ("flaky_service", "/fail", {}),
        ("slow_service", "/slow", {"timeoutSeconds": 0.5}),
        ("huge_report", "/big", {}),
        ("huge_stream", "/big-stream", {}),
        ("strict_service", "/bad", {}),
    ]
]


@pytest.fixture
def api() -> Iterator[FakeToolAPI]:
    with FakeToolAPI() as server:
        yield server


@pytest.fixture
def catalog_path(tmp_path) -> Path:
    document = yaml.safe_load(CATALOG_30.read_text())
    assert len(document["tools"]) == 30
    document["tools"] += FAILING
    path = tmp_path / "catalog.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


class ToolHarness:
    """The real loop and toolbox over in-memory conversations, a scripted model and the fake API."""

    def __init__(self, strategy, catalog_path, api: FakeToolAPI, *, embedder="hashing", **env):
        self.api = api
        self.settings = load_settings(
            conversation_storage="memory", tool_catalog_path=str(catalog_path), loop_initial_rag=False, **env
        )
        self.toolbox = build_toolbox(
            self.settings,
            rag_search=MemorySearchTool([]),
            embedder=HashingEmbedder() if embedder == "hashing" else embedder,
            lookup={"TOOL_API_URL": api.url, "TOOL_API_TOKEN": TOKEN}.get,
            cache=None,
        )
        self.strategy = strategy
        self.store = InProcessStore()
        self.orchestrator = Orchestrator(
            TurnDeps(
                store=self.store,
                strategy=strategy,
                tools=self.toolbox.registry,
                choose_tools=tool_chooser(self.toolbox.registry, self.toolbox.selector),
                config=loop_config(self.settings),
            )
        )

    async def turn(self, message, caller=ALICE, **kwargs):
        created = await self.store.create(Conversation(caller_id=caller.caller_id))
        request = TurnRequest(created.conversation_id, caller, message, **kwargs)
        turn = await self.orchestrator.begin(request)
        return [event async for event in turn.events()]

    def offered(self, iteration=0) -> list[str]:
        return [tool["function"]["name"] for tool in self.strategy.requests[iteration][1]]

    def system_prompt(self, iteration=0) -> str:
        return self.strategy.requests[iteration][0][0].content


def by_type(events, kind):
    return [event for event in events if event.type == kind]


def harness(catalog_path, api, *script, **kwargs) -> ToolHarness:
    return ToolHarness(ScriptedStrategy(list(script) or [answer("ok")]), catalog_path, api, **kwargs)


async def test_the_matching_tool_is_offered_and_decoys_are_trimmed_to_top_k(catalog_path, api):
    h = harness(catalog_path, api)
    events = await h.turn(
        "When will order 204 arrive?", context_type="orders", context={"accountId": "acc-42"}
    )
    offered = h.offered()
    assert len(h.toolbox.registry.all()) == 1 + 30 + len(FAILING)
    assert offered[:2] == ["rag_search", "list_orders"]  # always-on search, then the context's core tool
    assert "get_order_status" in offered and len(offered) == 2 + 6  # top 6 of the 14 candidates
    assert not {"preview_workflow", "list_table_configs", "flaky_service"} & set(offered)
    assert events[-1].type == "Completed" and api.requests == []  # offering calls nothing


async def test_the_context_filter_holds(catalog_path, api):
    h = harness(catalog_path, api)
    await h.turn("where is my order? add a reminder step", context_type="workflow")
    offered = h.offered()
    assert "list_workflow_rules" in offered and "preview_workflow" in offered
    assert not [name for name in offered if "order" in name]


async def test_roles_decide_the_tools_and_the_prompt(catalog_path, api):
    message = "Refund order 310 in full and hide the spam review 512"
    offered = {}
    prompts = {}
    for caller in (ALICE, ADMIN, MODERATOR):
        h = harness(catalog_path, api)
        await h.turn(message, caller=caller, context_type="orders")
        offered[caller.caller_id], prompts[caller.caller_id] = set(h.offered()), h.system_prompt()
    assert "refund_order" in offered["root"] and "refund_order" not in offered["alice"]
    assert "hide_review" in offered["mo"] and "hide_review" not in offered["alice"]
    assert ROLE_BLOCKS["admin"] in prompts["root"] and ROLE_BLOCKS["mod"] in prompts["mo"]
    assert ROLE_BLOCKS["user"] in prompts["alice"]

    h = harness(catalog_path, api)
    events = await h.turn(message, caller=ANONYMOUS, context_type="orders")
    assert h.strategy.requests[0][1] == [] and ROLE_BLOCKS["anonymous"] in h.system_prompt()
    assert events[-1].type == "Completed"


async def test_a_tool_the_caller_was_not_offered_is_refused(catalog_path, api):
    h = harness(catalog_path, api, tool_calls(call("refund_order", '{"orderId": "310"}')), answer("no"))
    events = await h.turn("refund order 310", context_type="orders")
    result = by_type(events, "ToolCallResult")[0]
    assert not result.success and "Unknown tool" in result.result and api.requests == []


async def test_the_context_id_is_pinned_and_the_context_reaches_the_model_as_data(catalog_path, api):
    h = harness(
        catalog_path,
        api,
        tool_calls(
            call("list_orders", '{"accountId": "acc-666"}', "c1"),
            call("get_order_status", '{"orderId": "8812"}', "c2"),
        ),
        answer("You have one open order."),
    )
    events = await h.turn("show my orders", context_type="orders", context={"accountId": "acc-42"})
    assert sorted(api.paths()) == ["/accounts/acc-42/orders", "/orders/8812"]  # the model's acc-666 replaced
    status_call = next(r for r in api.requests if r["path"] == "/orders/8812")
    assert status_call["query"] == {"accountId": ["acc-42"]}
    assert status_call["headers"]["authorization"] == f"Bearer {TOKEN}"
    assert status_call["headers"]["x-caller-assertion"].count(".") == 2  # who the call is for
    results = by_type(events, "ToolCallResult")
    assert [r.success for r in results] == [True, True] and '"accountId":"acc-42"' in results[0].result
    sent = h.strategy.requests[0][0]
    assert "acc-42" not in h.system_prompt()
    (data,) = [
        blocks(m.content, "app-context")
        for m in sent
        if m.role is Role.USER and blocks(m.content, "app-context")
    ]
    assert json.loads(data[0]) == {"contextType": "orders", "context": {"accountId": "acc-42"}}
    assert events[-1].type == "Completed"


async def test_http_500_timeout_and_oversized_answers_are_unsuccessful_and_the_turn_completes(
    catalog_path, api
):
    names = ["flaky_service", "slow_service", "huge_report", "huge_stream"]
    h = harness(
        catalog_path,
        api,
        tool_calls(*(call(name, "{}", f"c{i}") for i, name in enumerate(names))),
        answer("The services are unavailable right now."),
    )
    events = await h.turn("check the diagnostics", context_type="diagnostics")
    results = {r.tool_name: r for r in by_type(events, "ToolCallResult")}
    assert {name: r.success for name, r in results.items()} == dict.fromkeys(names, False)
    assert "HTTP 500" in results["flaky_service"].result and "db.py" not in results["flaky_service"].result
    assert "did not answer within 0.5s" in results["slow_service"].result
    for name in ("huge_report", "huge_stream"):
        assert "larger than 65536 bytes" in results[name].result
    tool_messages = [m for m in h.strategy.requests[1][0] if m.role is Role.TOOL]
    assert len(tool_messages) == 4 and all('"success": false' in m.content for m in tool_messages)
    assert events[-1].type == "Completed" and by_type(events, "ResponseChunk")


async def test_a_4xx_body_helps_the_model_and_never_reaches_the_client(catalog_path, api):
    h = harness(
        catalog_path,
        api,
        tool_calls(call("strict_service", "{}", "c1")),
        answer("The service needs a numeric order id."),
    )
    events = await h.turn("check the diagnostics", context_type="diagnostics")
    (result,) = by_type(events, "ToolCallResult")
    assert result.success is False and "HTTP 400 Bad Request" in result.result
    assert "numeric" not in result.result  # the upstream's body stays out of the client's event
    (tool_message,) = [m for m in h.strategy.requests[1][0] if m.role is Role.TOOL]
    assert "orderId must be numeric" in tool_message.content  # the model may read why
    assert events[-1].type == "Completed"


async def test_the_preview_path_emits_preview_and_hands_the_model_preview_sent(catalog_path, api):
    h = harness(
        catalog_path,
        api,
        tool_calls(call("preview_workflow", '{"change": "add a reminder email"}')),
        answer("Here is the preview. Shall I save it?"),
    )
    events = await h.turn(
        "show me the workflow with a reminder email", context_type="workflow", context={"workflowId": "wf-1"}
    )
    kinds = [e.type for e in events]
    assert kinds[kinds.index("ToolCallStart") + 1 : kinds.index("ToolCallStart") + 3] == [
        "Preview",
        "ToolCallResult",
    ]
    preview = by_type(events, "Preview")[0]
    assert preview.preview_type == "workflow_preview"
    assert preview.payload == {
        "workflowId": "wf-1",
        "steps": ["approval", "email"],
        "change": {"change": "add a reminder email"},
    }
    result = by_type(events, "ToolCallResult")[0]
    assert result.success and result.result == "preview_sent"
    sent = [blocks(m.content, "tool-result") for m in h.strategy.requests[1][0] if m.role is Role.TOOL]
    assert sent == [["preview_sent"]]  # tool results reach the model as data
    assert PREVIEW_NOTE in h.system_prompt()


async def test_arguments_cannot_move_the_request_to_another_host(catalog_path, api):
    bad = ["../../admin", "evil.example/x", "user@evil.example", "http://evil.example"]
    calls = [
        call("get_order_status", f'{{"orderId": "{v}", "accountId": "a"}}', f"c{i}")
        for i, v in enumerate(bad)
    ]
    h = harness(catalog_path, api, tool_calls(*calls), answer("no"))
    events = await h.turn("where is my order", context_type="orders")
    assert [r.success for r in by_type(events, "ToolCallResult")] == [False] * 4
    assert api.requests == []


class FailingBatch(HashingEmbedder):
    def embed_batch(self, texts):
        raise ConnectionError("embedder down")


class FailingQuery(HashingEmbedder):
    def embed(self, text):
        raise ConnectionError("embedder down")

    def embed_batch(self, texts):
        return [HashingEmbedder.embed(self, t) for t in texts]


@pytest.mark.parametrize("embedder", [None, FailingBatch(), FailingQuery()], ids=["none", "build", "search"])
async def test_each_degradation_branch_offers_every_context_filtered_tool(catalog_path, api, embedder):
    h = harness(catalog_path, api, embedder=embedder)
    events = await h.turn("where is my order", context_type="orders")
    expected = [offer.name for offer in h.toolbox.selector.candidates("orders", ALICE.roles)]
    assert sorted(h.offered()) == sorted(expected)
    assert len(expected) == 1 + 7 + 8  # search, the user's order tools, the context-free ones
    assert events[-1].type == "Completed"


# ---------------------------------------------------------------- through the app


@pytest.fixture
def app(catalog_path, api, monkeypatch):
    monkeypatch.setenv("TOOL_CATALOG_PATH", str(catalog_path))
    monkeypatch.setenv("TOOL_API_URL", api.url)
    monkeypatch.setenv("TOOL_API_TOKEN", TOKEN)
    monkeypatch.setenv("LOOP_INITIAL_RAG", "false")
    application = create_app()
    strategy = ScriptedStrategy(
        [tool_calls(call("preview_table_config", '{"change": "hide the price column"}')), answer("Done?")]
    )
    application.state.services.strategy = strategy  # the app's own parts, but a scripted model
    return TestClient(application)


def test_a_streamed_turn_sends_the_preview_to_the_client(app):
    from tests.fakes.sse import parse_sse

    headers = {"X-Caller-Id": "alice"}
    cid = app.post("/api/v1/chat/conversations", json={}, headers=headers).json()["conversationId"]
    with app.stream(
        "POST",
        f"/api/v1/chat/conversations/{cid}/messages/stream",
        json={"message": "hide the price column", "contextType": "tables", "context": {"tableId": "t-9"}},
        headers=headers,
    ) as response:
        messages = parse_sse("".join(response.iter_text()))
    kinds = [m.event for m in messages]
    assert kinds[-1] == "Completed" and "Preview" in kinds
    preview = messages[kinds.index("Preview")].data
    assert preview["previewType"] == "table_config_preview"
    assert preview["payload"] == {"tableId": "t-9", "columns": ["status", "name"]}
    assert messages[kinds.index("ToolCallResult")].data["result"] == "preview_sent"


def test_the_tools_list_shows_what_each_role_may_use(app, monkeypatch):
    def names(headers):
        response = app.get("/api/v1/agent/tools", headers=headers)
        assert response.status_code == 200, response.text
        return {tool["name"]: tool for tool in response.json()["tools"]}

    user = names({"X-Caller-Id": "alice"})
    admin = names({"X-Caller-Id": "root", "X-Caller-Roles": "user,admin"})
    assert "rag_search" in user and len(user) == 1 + 30 + len(FAILING) - 3  # refund, hide_review, reports
    assert set(admin) - set(user) == {"refund_order", "hide_review", "list_reported_content"}
    listed = user["get_order_status"]
    assert listed["contexts"] == ["orders"] and listed["core"] is False and listed["preview"] is None
    assert "accountId" not in listed["parameters"]["properties"]  # pinned: filled by the service
    assert user["preview_workflow"]["preview"] == "workflow_preview" and user["list_orders"]["core"] is True
    assert user["rag_search"]["contexts"] is None and user["rag_search"]["core"] is True
    assert app.get("/api/v1/agent/tools").status_code == 401
    monkeypatch.setenv("ALLOW_ANONYMOUS", "true")
    anonymous_allowed = TestClient(create_app())
    assert anonymous_allowed.get("/api/v1/agent/tools").json() == {"tools": []}


def test_a_bad_catalogue_stops_the_app_at_start(tmp_path, monkeypatch):
    from rag_orchestrator.errors import ConfigError

    bad = {
        "name": "x",
        "description": "y",
        "inputSchema": {"type": "object"},
        "http": {"method": "GET", "url": "https://a.example/", "extra": 1},
    }
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"tools": [bad]}))
    monkeypatch.setenv("TOOL_CATALOG_PATH", str(path))
    with pytest.raises(ConfigError, match=r"tool 'x': http.extra"):
        create_app(["health", "chat_stream"])


async def test_the_index_is_cached_in_s3_and_reused(aws_stack, catalog_path, aws_clients):
    settings = load_settings(
        tool_catalog_path=str(catalog_path),
        tool_index_cache=True,
        conversation_storage="memory",
        transcripts_bucket=aws_stack["TRANSCRIPTS_BUCKET"],
    )
    lookup = {"TOOL_API_URL": "http://127.0.0.1:9", "TOOL_API_TOKEN": TOKEN}.get

    first = build_toolbox(
        settings, rag_search=MemorySearchTool([]), embedder=HashingEmbedder(), lookup=lookup, aws=aws_clients
    )
    await first.selector.select("where is my order", "orders", ("user",))
    s3 = boto3.client("s3", endpoint_url=aws_stack["endpoint"])
    listed = s3.list_objects_v2(Bucket=aws_stack["TRANSCRIPTS_BUCKET"], Prefix=PREFIX)["Contents"]
    assert len(listed) == 1 and listed[0]["Key"].endswith(".json")

    class NoBatch(HashingEmbedder):
        def embed_batch(self, texts):
            raise AssertionError("the cached index should have been used")

    second = build_toolbox(
        settings, rag_search=MemorySearchTool([]), embedder=NoBatch(), lookup=lookup, aws=aws_clients
    )
    offered = await second.selector.select("When will order 204 arrive?", "orders", ("user",))
    assert "get_order_status" in offered and len(offered) == 8  # ranked, not the degraded full list
