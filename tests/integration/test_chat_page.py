"""The dev chat page in headless Chromium: a conversation, a streamed turn with tool calls against the
demo tool API, a preview and sources on screen; a file attached through the presigned S3 POST and
read by the turn. The screenshots go to .local/screenshots/."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest

from devserver.stack import ROOT
from rag_orchestrator.domain.fences import blocks
from tests.fakes.attachments import render_png
from tests.fakes.llm_script import text_reply, tool_calls_reply
from tests.integration.served import run_node

pytestmark = pytest.mark.integration

SCREENSHOT = ROOT / ".local" / "screenshots" / "chat.png"
ATTACHMENT_SCREENSHOT = SCREENSHOT.with_name("chat-attachment.png")


def new_caller() -> str:
    """A caller of the test's own: the table on the moto server is shared with the other tests."""
    return f"alice-{uuid.uuid4().hex[:8]}"


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
    context = json.dumps({"workflowId": "wf-onboarding"})  # the account is alice's claim (the page's default)
    caller = new_caller()
    page = run_node(
        "chat_page.mjs",
        dev_app.url,
        str(SCREENSHOT),
        caller,
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
    cid = httpx.get(f"{dev_app.url}/api/v1/chat/conversations", headers={"X-Caller-Id": caller}).json()
    stored = httpx.get(
        dev_app.conversation_url(cid["items"][0]["conversationId"], "messages"),
        headers={"X-Caller-Id": caller},
    ).json()["items"]
    assert stored[-1]["content"] == ANSWER and page["footer"].endswith(stored[-1]["messageId"])


def test_the_page_uploads_an_attachment_to_s3_and_sends_it_with_the_next_message(
    aws_stack, dev_app, tmp_path
):
    picture, refused = tmp_path / "invoice.png", tmp_path / "animation.gif"
    picture.write_bytes(render_png(["INVOICE 4711", "Paid by Alice Martin"]))
    refused.write_bytes(b"GIF89a" + bytes(32))
    answer = "The invoice number is 4711."
    dev_app.llm.script(text_reply(answer))
    ATTACHMENT_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    question, caller = "What is the invoice number?", new_caller()
    page = run_node(
        "chat_attachments.mjs",
        dev_app.url,
        str(ATTACHMENT_SCREENSHOT),
        caller,
        question,
        str(refused),
        str(picture),
    )
    assert page["consoleErrors"] == [] and page["errors"] == [] and page["composerError"] == ""
    assert page["refusal"]["error"].startswith("animation.gif: 415 ") and page["refusal"]["chips"] == []
    assert page["chips"] == ["invoice.png"]
    assert page["user"] == [f"{question}Attached: invoice.png"] and page["attached"] == [
        "Attached: invoice.png"
    ]
    assert page["chipsAfter"] == []  # the turn took the file; the next message starts with none
    assert "Reading invoice.png (an attachment not processed yet)" in page["statuses"]
    assert page["answer"] == answer and page["reopened"]["attached"] == ["Attached: 1 file"]
    # The file went to S3, not through the API, and the model read its text in the user message.
    seen = [m for m in dev_app.llm.requests[-1]["messages"] if m["role"] == "user"][-1]["content"]
    (files,) = blocks(seen, "attachments")  # the files' text, enclosed as data
    assert (
        seen.startswith(f"{question}\n\n<data-") and files.startswith("[Attached files] ") and "4711" in files
    )
    owner = {"X-Caller-Id": caller}
    (conversation,) = httpx.get(f"{dev_app.url}/api/v1/chat/conversations", headers=owner).json()["items"]
    cid = conversation["conversationId"]
    stored = httpx.get(dev_app.conversation_url(cid, "messages"), headers=owner).json()["items"]
    (attachment_id,) = stored[0]["attachmentIds"]
    status = httpx.get(dev_app.conversation_url(cid, f"attachments/{attachment_id}"), headers=owner).json()
    assert status["status"] == "READY" and status["sizeBytes"] == picture.stat().st_size


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
    claims = json.dumps({"accountId": "acct-1001"})  # alice's account in the demo tool API
    page = run_node(
        "approval_page.mjs", dev_app.url, "alice", "Cancel order A-1002", claims, "approve", "yes"
    )
    assert page["consoleErrors"] == [] and page["errors"] == []
    assert page["asked"] == {
        "card": ["approve cancel_order?"],
        "footer": ["1 model call(s) · 29 tokens · awaiting approval"],
    }
    assert page["toolCards"] == ["✓ cancel_order"]
    assert page["answers"][-1] == "Order A-1002 is cancelled."
    # The demo tool API ran the approved call, for alice's account (its answer, as the model read it).
    results = [m["content"] for m in dev_app.llm.requests[-1]["messages"] if m["role"] == "tool"]
    assert blocks(results[-1], "tool-result") == ['{"orderId":"A-1002","status":"cancelled"}']
