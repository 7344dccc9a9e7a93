"""The dev chat page in headless Chromium, at a desktop's 1280×900 and a phone's 390×844: everything a
user does with it — a turn with tools, a preview, Markdown (with HTML in it that never runs) and a
citation that opens its passage; feedback; the title in the list; regenerate; edit; stop; an approval;
an error the service answers; rename, search and delete; the API docs page; the caller cleared — and no
request leaving 127.0.0.1. The memory panel: a turn listed with its kinds, search, forget one and all,
a temporary chat remembered not at all, another caller seeing none of it.
A file attached through the presigned S3 POST and read by the turn; a reload that resumes the running
turn. The screenshots go to .local/screenshots/."""

from __future__ import annotations

import json
import os
import re
import uuid

import httpx
import pytest

from devserver.stack import ROOT
from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.domain.fences import blocks
from rag_orchestrator.tools.assertion import AssertionSigner
from tests.fakes.attachments import render_png
from tests.fakes.llm_script import text_reply, tool_calls_reply
from tests.integration.served import run_node

pytestmark = pytest.mark.integration

SHOTS = ROOT / ".local" / "screenshots"
TITLE = "Order status and onboarding"
STOPPED = "The suite starts a moto server and then goes on and on."
QUESTIONS = {
    "first": "Where is my order A-1001? Add a reminder email to onboarding. <b>How</b> do I start the dev server?",
    "edited": "How do I start the dev server, in one line?",
    "stopped": "Tell me everything about the suite.",
    "approval": "Cancel order A-1002, please.",
}
ANSWER = (
    "## Your order\n\n"
    "Order **A-1001** has *shipped* with `PostNL`.\n\n"
    "- the preview adds a reminder email\n"
    "- start the stack with make dev [source:guide#0]\n\n"
    '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'
)


def new_caller() -> str:
    """A caller of the test's own: the table on the moto server is shared with the other tests."""
    return f"alice-{uuid.uuid4().hex[:8]}"


def titles_for(request: dict) -> object:
    """The title call after a first turn is answered apart from the script (its order is the app's)."""
    asked = json.dumps(request.get("messages", []))
    return text_reply(TITLE) if "Write a title" in asked else None


@pytest.fixture
def titled(monkeypatch) -> None:
    monkeypatch.setenv("AUTO_TITLE", "true")


@pytest.mark.parametrize("size", ["1280x900", "390x844"])
def test_the_page_does_what_a_chat_app_does_at_both_sizes(titled, aws_stack, dev_app, size):
    dev_app.llm.answer_first = titles_for
    dev_app.llm.script(
        tool_calls_reply(
            [
                ("get_order_status", {"orderId": "A-1001"}, "call_1"),
                ("preview_workflow", {"change": "reminder email"}, "call_2"),
            ]
        ),
        text_reply(ANSWER, chunks=6),
        text_reply("Run make dev to start the stack."),  # regenerate
        text_reply("make dev"),  # edit
        text_reply(STOPPED, chunks=4, gate_after=1),
        tool_calls_reply([("cancel_order", {"orderId": "A-1002"}, "call_cancel")]),
        text_reply("Order A-1002 is cancelled."),
    )
    SHOTS.mkdir(parents=True, exist_ok=True)
    caller = new_caller()
    context = json.dumps({"workflowId": "wf-onboarding"})  # the account is the page's default claim
    page = run_node("chat_page.mjs", dev_app.url, str(SHOTS), size, caller, context, json.dumps(QUESTIONS))
    print(f"screenshots: {SHOTS}")
    # The one message in the console is the browser's own line for the refused question's 422.
    assert page["offsite"] == [] and [e for e in page["consoleErrors"] if "status of 422" not in e] == []
    assert len(page["consoleErrors"]) == 1
    assert page["overflow"] <= 0  # nothing wider than the screen
    first = page["first"]
    assert first["user"] == [QUESTIONS["first"]] and first["userHtml"] == 0  # the question's <b> is text
    assert first["toolCards"] == ["✓ get_order_status", "✓ preview_workflow"]
    assert first["previews"] == ["form submitted", "manager approval", "account created", "reminder email"]
    assert (
        first["headings"] == ["Your order"] and first["strong"] == ["A-1001"] and first["code"] == ["PostNL"]
    )
    assert first["items"] == ["the preview adds a reminder email", "start the stack with make dev [1]"]
    assert first["injected"] == 0 and first["pwned"] is None  # the HTML stayed text
    assert '<img src=x onerror="window.__pwned=1">' in first["answerText"]
    assert first["sources"] == ["Guide guide#0"] and first["footer"].startswith("2 model call(s)")
    assert page["passage"]["title"] == "Guide" and page["passage"]["key"].startswith("guide#0")
    assert "make dev" in page["passage"]["text"]
    assert page["titles"] == [TITLE] and page["heading"] == TITLE
    regenerated = page["regenerated"]
    assert regenerated["answers"] == ["Run make dev to start the stack."] and regenerated["turns"] == 1
    assert page["edited"] == {"user": [QUESTIONS["edited"]], "answers": ["make dev"]}
    stopped = page["stopped"]
    assert stopped["footer"].endswith("cancelled") and STOPPED.startswith(stopped["answer"])
    assert stopped["answer"] and stopped["answer"] != STOPPED  # the model never got past its first piece
    assert page["approval"] == {
        "card": ["approve cancel_order?"],
        "toolCards": ["✓ cancel_order"],
        "answer": "Order A-1002 is cancelled.",
    }
    assert page["refused"].startswith("422 Validation failed") and "32000" in page["refused"]
    assert page["renamed"] == {"titles": ["Orders and workflows"], "heading": "Orders and workflows"}
    assert page["found"] == ["Orders and workflows"] and page["notFound"] == ["No title matches."]
    assert page["deleted"] == {"list": ["No conversations yet."], "transcript": 0}
    assert page["docsTitle"].startswith("RAG Orchestrator")
    assert page["cleared"] == {"list": ["Enter a caller id to see its conversations."], "transcript": 0}
    # What the page did is what the service holds.
    owner = {"X-Caller-Id": caller}
    assert httpx.get(f"{dev_app.url}/api/v1/chat/conversations", headers=owner).json()["items"] == []
    # read as the tool would, with the caller's assertion signed by the service's key
    signer = AssertionSigner("rag-orchestrator", lambda: os.environ["ASSERTION_PRIVATE_KEY"])
    assertion = signer.sign(Caller(caller), dev_app.url, "get_order_status", "check")
    order = httpx.get(
        f"{dev_app.url}/demo-tools/orders/A-1002",
        params={"accountId": "acct-1001"},
        headers={"X-Caller-Assertion": assertion},
    ).json()
    assert order["status"] == "cancelled"
    for name in ("chat", "passage", "list", "approval", "error", "docs"):
        assert (SHOTS / f"{name}-{size.split('x')[0]}.png").stat().st_size > 5_000


MEMORY_QUESTIONS = {
    "temporary": "My locker code is 4471, keep it between us.",
    "remembered": "I prefer the PostNL depot in Utrecht for returns.",
}


@pytest.mark.parametrize("size", ["1280x900", "390x844"])
def test_the_memory_panel_lists_pages_searches_and_forgets_and_temporary_chats_add_nothing(
    aws_stack, dev_app, size
):
    answer = "Noted: <b>returns</b> go to the Utrecht depot."
    dev_app.llm.script(text_reply("Understood, nothing of this chat is kept."), text_reply(answer))
    SHOTS.mkdir(parents=True, exist_ok=True)
    caller, other = new_caller(), new_caller()
    shot = SHOTS / f"memory-{size.split('x')[0]}.png"
    page = run_node(
        "memory_page.mjs", dev_app.url, str(shot), size, caller, other, json.dumps(MEMORY_QUESTIONS)
    )
    # Every request the page made succeeded, but the health badge's on a busy machine (a slow check is a 503).
    assert [f for f in page["failures"] if f != "503 /api/v1/agent/health"] == []
    assert len(page["consoleErrors"]) == len(page["failures"]) and page["offsite"] == []
    assert page["overflow"] <= 0
    assert page["temporaryBadges"] == ["temporary"]
    said, answered = f"you said: {MEMORY_QUESTIONS['remembered']}", f"answered: {answer}"
    assert page["listed"] == [answered, said] and page["html"] == 0  # newest first; the <b> stayed text
    assert page["firstPage"] == {"items": [answered], "more": ["Show more"]}  # pages of one
    assert page["secondPage"] == {"items": [answered, said], "more": []}  # the next added below, no more
    assert page["searched"][0] == said and len(page["searched"]) == 2  # the best match first
    assert page["afterForget"] == [said] and page["apiAfterForget"] == ["said"]
    assert page["otherClosed"] is False and page["other"] == ["Nothing remembered."]
    assert page["afterForgetAll"] == ["Nothing remembered."]
    assert page["cleared"] == {"open": False, "items": []}
    assert httpx.get(f"{dev_app.url}/api/v1/memory", headers={"X-Caller-Id": caller}).json()["items"] == []
    assert shot.stat().st_size > 5_000


def test_a_reload_resumes_the_running_turn(aws_stack, dev_app):
    answer = "The dev server starts with make dev and listens on port 8000."
    dev_app.llm.script(text_reply(answer, chunks=4, gate_after=1))

    def go_on(line: dict) -> None:
        if line.get("resumed"):  # the model finishes only once the reloaded page follows the turn
            dev_app.llm.open_gate()

    page = run_node(
        "reload_page.mjs", dev_app.url, new_caller(), "How do I start the dev server?", on_line=go_on
    )
    assert page["offsite"] == [] and page["consoleErrors"] == []
    assert page["before"] and answer.startswith(page["before"]) and page["before"] != answer
    assert page["user"] == ["How do I start the dev server?"] and page["answers"] == [answer]
    assert page["footer"].startswith("1 model call(s)") and page["running"] is None


def test_the_page_uploads_an_attachment_to_s3_and_sends_it_with_the_next_message(
    aws_stack, dev_app, tmp_path
):
    picture, refused = tmp_path / "invoice.png", tmp_path / "animation.gif"
    picture.write_bytes(render_png(["INVOICE 4711", "Paid by Alice Martin"]))
    refused.write_bytes(b"GIF89a" + bytes(32))
    answer = "The invoice number is 4711."
    dev_app.llm.script(text_reply(answer))
    SHOTS.mkdir(parents=True, exist_ok=True)
    question, caller = "What is the invoice number?", new_caller()
    page = run_node(
        "chat_attachments.mjs",
        dev_app.url,
        str(SHOTS / "chat-attachment.png"),
        caller,
        question,
        str(refused),
        str(picture),
    )
    assert page["consoleErrors"] == [] and page["errors"] == [] and page["composerError"] == ""
    assert page["refusal"]["error"].startswith("animation.gif: 415 ") and page["refusal"]["chips"] == []
    assert page["chips"] == ["invoice.png"]
    assert page["user"] == [question] and page["attached"] == ["Attached: invoice.png"]
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


def test_the_page_is_served_only_by_the_dev_server_and_loads_nothing_from_elsewhere(dev_app):
    from rag_orchestrator.api.app import API_ROUTERS, STREAM_ROUTERS, create_app

    page = httpx.get(f"{dev_app.url}/")
    assert page.status_code == 200 and "<title>RAG Orchestrator" in page.text
    local = re.compile(r"https?://(127\.0\.0\.1|localhost)[:/]")
    for name in [*(f.name for f in (ROOT / "devserver" / "static").iterdir() if f.suffix != ".html"), ""]:
        path = f"/static/{name}" if name else "/"
        asset = httpx.get(dev_app.url + path)
        assert asset.status_code == 200
        assert not re.findall(r"https?://[^\s\"'`)]+", local.sub("", asset.text)), path  # no CDN: all local
    for routers in (API_ROUTERS, STREAM_ROUTERS):
        paths = {getattr(route, "path", "") for route in create_app(routers).routes}
        assert "/" not in paths and not any(p.startswith(("/static", "/demo-tools")) for p in paths)
