"""The dev chat page in headless Chromium: a conversation, a streamed turn with tool calls against the
demo tool API, a preview and sources on screen; the screenshot goes to .local/screenshots/chat.png."""

from __future__ import annotations

import json

import httpx
import pytest

from devserver.stack import ROOT
from tests.fakes.llm_script import text_reply, tool_calls_reply
from tests.integration.served import run_node

pytestmark = pytest.mark.integration

SCREENSHOT = ROOT / ".local" / "screenshots" / "chat.png"
QUESTION = "Where is my order A-1001? Add a reminder email to the onboarding workflow. How do I start the dev server?"
ANSWER = (
    "Order A-1001 has shipped with PostNL. The preview adds a reminder email after the account is created. "
    "The dev server starts with make dev [source:guide#0]."
)


def test_the_page_streams_a_turn_with_tools_a_preview_and_sources(aws_stack, dev_app):
    dev_app.llm.script(
        tool_calls_reply(
            [
                ("get_order_status", {"orderId": "A-1001"}, "call_1"),
                ("preview_workflow", {"change": "reminder email"}, "call_2"),
            ]
        ),
        text_reply(ANSWER, chunks=6),
    )
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    SCREENSHOT.unlink(missing_ok=True)
    context = json.dumps({"accountId": "acct-1001", "workflowId": "wf-onboarding"})
    page = run_node(
        "chat_page.mjs",
        dev_app.url,
        str(SCREENSHOT),
        "alice",
        QUESTION,
        context,
    )
    print(f"screenshot: {SCREENSHOT}")
    assert page["consoleErrors"] == [] and page["errors"] == []
    assert page["health"] == "UP"
    assert {"rag_search", "get_order_status", "list_orders", "preview_workflow"} <= set(page["tools"])
    assert page["user"] == [QUESTION]
    assert page["toolCards"] == ["✓ get_order_status", "✓ preview_workflow"]
    assert page["previews"] == ["form submitted", "manager approval", "account created", "reminder email"]
    assert page["answer"] == ANSWER
    assert page["sources"] == ["Guide guide#0"]
    assert page["footer"].startswith("2 model call(s)")
    assert len(page["conversations"]) == 1
    assert page["reopened"]["bubbles"] == [QUESTION, ANSWER]
    assert page["reopened"]["storedTools"][0].startswith("⚙ get_order_status")
    assert SCREENSHOT.stat().st_size > 10_000
    # what the page showed is what was stored
    cid = httpx.get(f"{dev_app.url}/api/v1/chat/conversations", headers={"X-Caller-Id": "alice"}).json()
    stored = httpx.get(
        dev_app.conversation_url(cid["items"][0]["conversationId"], "messages"),
        headers={"X-Caller-Id": "alice"},
    ).json()["items"]
    assert stored[-1]["content"] == ANSWER and page["footer"].endswith(stored[-1]["messageId"])


def test_the_page_is_served_only_by_the_dev_server(dev_app):
    from rag_orchestrator.api.app import API_ROUTERS, STREAM_ROUTERS, create_app

    page = httpx.get(f"{dev_app.url}/")
    assert page.status_code == 200 and "<title>RAG Orchestrator" in page.text
    assert "http" not in page.text.replace("http-equiv", "")  # no CDN: every asset is local
    for path in ("/static/app.js", "/static/style.css"):
        asset = httpx.get(dev_app.url + path)
        assert asset.status_code == 200 and "https://" not in asset.text
    for routers in (API_ROUTERS, STREAM_ROUTERS):
        paths = {getattr(route, "path", "") for route in create_app(routers).routes}
        assert "/" not in paths and not any(p.startswith(("/static", "/demo-tools")) for p in paths)


def test_the_page_decides_an_approval_and_shows_the_continuation(aws_stack, dev_app):
    dev_app.llm.script(
        tool_calls_reply([("cancel_order", {"orderId": "A-1002"}, "call_cancel")]),
        text_reply("Order A-1002 is cancelled."),
    )
    context = json.dumps({"accountId": "acct-1001"})
    page = run_node(
        "approval_page.mjs", dev_app.url, "alice", "Cancel order A-1002", context, "approve", "yes"
    )
    assert page["consoleErrors"] == [] and page["errors"] == []
    assert page["asked"] == {
        "card": ["approve cancel_order?"],
        "footer": ["1 model call(s) · 29 tokens · awaiting approval"],
    }
    assert page["toolCards"] == ["✓ cancel_order"]
    assert page["answers"][-1] == "Order A-1002 is cancelled."
    order = httpx.get(f"{dev_app.url}/demo-tools/orders/A-1002", params={"accountId": "acct-1001"}).json()
    assert order["status"] == "cancelled"  # the demo tool API ran the approved call
