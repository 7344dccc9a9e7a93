"""Turns with attachments on the local stack: files uploaded with the presigned POST to the moto server,
read by the offline engines, the fake LLM as the model, conversation memory on a real Chroma server."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from fastapi.testclient import TestClient

from rag_orchestrator.api.app import ALL_ROUTERS, create_app
from rag_orchestrator.config import load_settings
from rag_orchestrator.domain.fences import blocks
from rag_orchestrator.errors import AttachmentNotReady
from rag_orchestrator.tools.base import ToolContext
from tests.fakes.attachments import SPEECH_WAV, post_upload, render_png
from tests.fakes.llm_script import text_reply
from tests.fakes.pdf import make_pdf
from tests.fakes.sse import SSEMessage, parse_sse
from tests.integration.knowledge import ingest, memory, rag_search

pytestmark = pytest.mark.integration

BASE = "/api/v1/chat/conversations"
ALICE = {"X-Caller-Id": "alice"}
BOB = {"X-Caller-Id": "bob"}
GUIDE = "The dev server starts with make dev and listens on port 8000 by default."


@pytest.fixture
def client(aws_stack, chroma_url, fake_llm, monkeypatch) -> TestClient:
    monkeypatch.setenv("CHROMA_COLLECTION", f"attachment-kb-{uuid.uuid4().hex[:12]}")
    monkeypatch.setenv("RAG_SIMILARITY_THRESHOLD", "0.05")
    for key, value in fake_llm.settings_for("openai_compatible", model_max_retries=0).items():
        monkeypatch.setenv(key.upper(), str(value))
    ingest([{"documentId": "guide", "title": "Guide", "text": GUIDE}], load_settings())
    return TestClient(create_app(ALL_ROUTERS))


def new_conversation(c: TestClient, headers=ALICE) -> str:
    response = c.post(BASE, json={}, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()["conversationId"]


def declare(c: TestClient, cid: str, name: str, content_type: str, size: int, headers=ALICE) -> dict:
    body = {"fileName": name, "contentType": content_type, "sizeBytes": size}
    response = c.post(f"{BASE}/{cid}/attachments", json=body, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()


def upload(c: TestClient, cid: str, name: str, content_type: str, body: bytes, headers=ALICE) -> str:
    created = declare(c, cid, name, content_type, len(body), headers)
    sent = post_upload(created["upload"], body, name)
    assert sent.status_code == 204, sent.text
    return created["attachmentId"]


def stream(c: TestClient, cid: str, body: dict, headers=ALICE) -> list[SSEMessage]:
    with c.stream("POST", f"{BASE}/{cid}/messages/stream", json=body, headers=headers) as response:
        assert response.status_code == 200, response.read()
        return parse_sse("".join(response.iter_text()))


def statuses(events: list[SSEMessage]) -> list[tuple[str, str | None]]:
    return [(e.data["status"], e.data.get("details")) for e in events if e.event == "StatusUpdate"]


def user_message(request: dict) -> str:
    return [m for m in request["messages"] if m["role"] == "user"][-1]["content"]


def status_of(c: TestClient, cid: str, aid: str) -> dict:
    response = c.get(f"{BASE}/{cid}/attachments/{aid}", headers=ALICE)
    assert response.status_code == 200, response.text
    return response.json()


def stored(c: TestClient, cid: str) -> list[dict]:
    response = c.get(f"{BASE}/{cid}/messages", headers=ALICE)
    assert response.status_code == 200, response.text
    return response.json()["items"]


async def search(modality=None, caller: str = "alice") -> set[tuple[str, str]]:
    arguments = {"query": "invoice Alice Martin quarterly report lamp", "max_results": 10}
    if modality is not None:
        arguments["modality"] = modality
    result = await rag_search().execute(arguments, ToolContext("c-later", caller))
    return {(p.source or "", p.document_id) for p in result.passages}


async def test_a_streamed_turn_reads_an_image_a_pdf_and_a_voice_note_and_the_model_gets_their_text(
    client, fake_llm
):
    c = client
    cid = new_conversation(c)
    png = upload(c, cid, "invoice.png", "image/png", render_png(["INVOICE 4711", "Paid by Alice Martin"]))
    pdf = upload(
        c, cid, "log.pdf", "application/pdf", make_pdf(["The lamp was replaced on the third of March."])
    )
    wav = upload(c, cid, "note.wav", "audio/wav", SPEECH_WAV.read_bytes())
    assert status_of(c, cid, png)["status"] == "PENDING_UPLOAD"  # no S3 events here: read in the turn
    answer = f"The invoice is 4711 [source:attachment:{png}#0] and the lamp was replaced [source:attachment:{pdf}#0]."
    fake_llm.script(text_reply(answer))

    events = stream(c, cid, {"message": "What do my files say?", "attachmentIds": [png, pdf, wav]})

    assert events[-1].event == "Completed", events[-1].data
    shown = statuses(events)
    for name in ("invoice.png", "log.pdf", "note.wav"):
        assert (f"Reading {name}", "an attachment not processed yet") in shown
    assert shown.index(("Reading note.wav", "an attachment not processed yet")) < shown.index(
        ("Iteration 1 of 10", None)
    )
    seen = user_message(fake_llm.requests[0])
    assert seen.startswith("What do my files say?\n\n<data-")
    assert blocks(seen, "attachments")[0].startswith("[Attached files] ")
    assert (
        f'<attachment citation="[source:attachment:{png}#0]" attachmentId="{png}" file="invoice.png" '
        'modality="image-ocr">' in seen
    )
    assert "4711" in seen and "Martin" in seen
    assert f'attachmentId="{pdf}" file="log.pdf" modality="document">\nThe lamp was replaced' in seen
    assert f'attachmentId="{wav}" file="note.wav" modality="audio">' in seen and "quarterly" in seen
    sources = next(e.data["sources"] for e in events if e.event == "Sources")
    assert {(s["documentId"], s["title"], s["source"]) for s in sources} == {
        (f"attachment:{png}", "invoice.png (image-ocr)", "image-ocr"),
        (f"attachment:{pdf}", "log.pdf (document)", "document"),
    }
    question = stored(c, cid)[0]
    assert question["content"] == "What do my files say?"  # the ids are stored, never the text
    assert question["attachmentIds"] == [png, pdf, wav]
    assert {status_of(c, cid, a)["status"] for a in (png, pdf, wav)} == {"READY"}
    bobs = new_conversation(c, BOB)
    for aid in (png, pdf, wav):  # Bob gets 404 for each: its status, and a turn naming it
        assert_refused(c.get(f"{BASE}/{cid}/attachments/{aid}", headers=BOB), 404, "Conversation not found")
        body = {"message": "Hi", "attachmentIds": [aid]}
        refused = c.post(f"{BASE}/{bobs}/messages/stream", json=body, headers=BOB)
        assert_refused(refused, 404, "Attachment not found")

    # Read on demand, the segments were indexed as Alice's conversation memory.
    assert await search("image-ocr") == {("image-ocr", f"attachment:{png}")}
    assert ("audio", f"attachment:{wav}") in await search()
    assert await search("image-ocr", caller="bob") == set()
    fragment = memory(load_settings()).store
    assert fragment.count(where={"attachmentId": png}) == 1

    # A later turn's window shows the earlier message with a note of its attachments, not their text.
    fake_llm.script(text_reply("Anything else?"))
    later = stream(c, cid, {"message": "Thanks."})
    assert later[-1].event == "Completed"
    earlier = next(m for m in fake_llm.requests[1]["messages"] if m["role"] == "user")["content"]
    assert earlier.startswith("What do my files say?\n\n[Attached files] Attachments ")
    assert png in earlier and "4711" not in earlier

    # Deleting the conversation removes the segments from memory.
    assert c.delete(f"{BASE}/{cid}", headers=ALICE).status_code == 204
    assert fragment.count(where={"conversationId": cid}) == 0


def test_a_file_declared_before_its_chat_was_made_temporary_is_read_but_not_remembered(client, fake_llm):
    """The file's own memory switch is the conversation's when it was declared; a PATCH to a temporary
    chat after it left the turn that read it indexing it into the caller's memory all the same."""
    c = client
    cid = new_conversation(c)
    aid = upload(c, cid, "vault.txt", "text/plain", b"Temporary: the vault code is 4711.")
    assert c.patch(f"{BASE}/{cid}", json={"memory": False}, headers=ALICE).status_code == 200
    fake_llm.script(text_reply("It says 4711."))
    events = stream(c, cid, {"message": "What does it say?", "attachmentIds": [aid]})
    assert events[-1].event == "Completed" and status_of(c, cid, aid)["status"] == "READY"
    assert "4711" in user_message(fake_llm.requests[-1])  # read for the turn
    assert memory(load_settings()).store.count(where={"attachmentId": aid}) == 0


def assert_refused(response, status: int, error: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error", "message", "timestamp", "requestId"} and body["error"] == error


def test_refusals_come_before_any_event_and_leave_nothing_behind(client, fake_llm):
    c = client
    cid = new_conversation(c)
    ready = upload(c, cid, "notes.md", "text/markdown", b"# Notes\nShip on Friday.")
    never = declare(c, cid, "later.txt", "text/plain", 10)["attachmentId"]
    broken = upload(c, cid, "broken.pdf", "application/pdf", b"%PDF-1.4\n" + b"\x00garbage" * 40)
    with pytest.raises(AttachmentNotReady):  # FAILED before a turn names it
        asyncio.run(c.app.state.services.attachments.ensure_processed("alice", cid, broken))  # type: ignore[attr-defined]
    other_conversation = new_conversation(c)
    elsewhere = upload(c, other_conversation, "elsewhere.md", "text/markdown", b"# Elsewhere\nNot here.")
    bobs_conversation = new_conversation(c, BOB)
    bobs = upload(c, bobs_conversation, "bob.md", "text/markdown", b"# Bob\nPrivate.", BOB)

    cases = [
        ([bobs], 404, "Attachment not found"),
        ([ready, elsewhere], 404, "Attachment not found"),
        ([str(uuid.uuid4())], 404, "Attachment not found"),
        ([never], 409, "Attachment not ready"),
        ([ready, broken], 409, "Attachment not ready"),
    ]
    routes = [
        ("messages", lambda ids: {"message": "Hi", "attachmentIds": ids}),
        ("messages/stream", lambda ids: {"message": "Hi", "attachmentIds": ids}),
        ("ui-stream", lambda ids: ui_body("Hi", ids)),
    ]
    for ids, status, error in cases:
        for route, body in routes:
            assert_refused(c.post(f"{BASE}/{cid}/{route}", json=body(ids), headers=ALICE), status, error)
    for aid in (ready, never, broken):  # Bob gets 404 for each of Alice's, in his own conversation too
        assert_refused(
            c.post(
                f"{BASE}/{bobs_conversation}/messages",
                json={"message": "Hi", "attachmentIds": [aid]},
                headers=BOB,
            ),
            404,
            "Attachment not found",
        )
    assert fake_llm.requests == []
    conversation = c.get(f"{BASE}/{cid}", headers=ALICE).json()
    assert conversation["messageCount"] == 0  # no user message stored
    fake_llm.script(text_reply("Ship on Friday."))
    events = stream(c, cid, {"message": "When do we ship?", "attachmentIds": [ready]})  # no lock was left
    assert events[-1].event == "Completed"
    assert "Ship on Friday." in user_message(fake_llm.requests[0])


def ui_body(text: str, attachment_ids: list[str] | None = None, files: list[str] | None = None) -> dict:
    parts = [{"type": "text", "text": text}]
    parts += [{"type": "file", "mediaType": "text/markdown", "url": url} for url in files or ()]
    body: dict = {"messages": [{"id": str(uuid.uuid4()), "role": "user", "parts": parts}]}
    if attachment_ids is not None:
        body["attachmentIds"] = attachment_ids
    return body


def test_an_attachment_that_fails_while_the_turn_reads_it_is_left_out_and_the_turn_says_so(client, fake_llm):
    c = client
    cid = new_conversation(c)
    good = upload(c, cid, "plan.md", "text/markdown", b"# Plan\nShip on Friday.")
    broken = upload(c, cid, "broken.pdf", "application/pdf", b"%PDF-1.4\n" + b"\x00garbage" * 40)
    fake_llm.script(text_reply("Ship on Friday; the PDF could not be read."))

    events = stream(c, cid, {"message": "What is the plan?", "attachmentIds": [good, broken]})

    assert events[-1].event == "Completed"
    assert (
        "Could not read broken.pdf",
        f"continuing without it: Attachment {broken} could not be read: unreadable file: the PDF could not be parsed",
    ) in statuses(events)
    seen = user_message(fake_llm.requests[0])
    assert "Ship on Friday." in seen
    assert (
        f'<attachment attachmentId="{broken}" file="broken.pdf" note="the file could not be read"/>' in seen
    )
    assert stored(c, cid)[0]["attachmentIds"] == [good, broken]
    assert status_of(c, cid, broken)["status"] == "FAILED"


def test_the_ai_sdk_route_takes_file_parts_that_point_at_attachments(client, fake_llm):
    c = client
    cid = new_conversation(c)
    plan = upload(c, cid, "plan.md", "text/markdown", b"# Plan\nShip on Friday.")
    memo = upload(c, cid, "memo.txt", "text/plain", b"Budget approved.")
    fake_llm.script(text_reply("Ship on Friday, budget approved."))
    status_url = f"http://testserver{BASE}/{cid}/attachments/{plan}"  # what the app read the status from

    body = ui_body("What is the plan?", attachment_ids=[memo], files=[status_url])
    with c.stream("POST", f"{BASE}/{cid}/ui-stream", json=body, headers=ALICE) as response:
        assert response.status_code == 200
        response.read()

    seen = user_message(fake_llm.requests[0])
    assert "Ship on Friday." in seen and "Budget approved." in seen
    assert stored(c, cid)[0]["attachmentIds"] == [memo, plan]
    for url in ("data:text/plain;base64,SGk=", "https://example.com/plan.md"):
        refused = c.post(f"{BASE}/{cid}/ui-stream", json=ui_body("Hi", files=[url]), headers=ALICE)
        assert refused.status_code == 422 and "presigned POST" in refused.json()["message"]
    assert len(stored(c, cid)) == 2
