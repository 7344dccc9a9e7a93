"""Attachments end to end on the local stack: the API on the moto server, files uploaded with a real
multipart POST to the presigned URL (its policy checked as S3 checks it), read by the offline engines."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest
from fastapi.testclient import TestClient

from rag_orchestrator.api.app import create_app
from rag_orchestrator.attachments.service import Attachments
from rag_orchestrator.domain.attachments import Attachment
from rag_orchestrator.errors import AttachmentChanged, AttachmentNotFound, AttachmentNotReady
from tests.fakes.attachments import DOCX, SPEECH_WAV, make_docx, post_upload, render_png
from tests.fakes.pdf import make_pdf

pytestmark = pytest.mark.integration

BASE = "/api/v1/chat/conversations"


@pytest.fixture
def client(aws_stack) -> TestClient:
    return TestClient(create_app(["health", "conversations", "attachments"]))


@pytest.fixture
def caller() -> str:
    return f"caller-{uuid.uuid4().hex[:8]}"


def as_(caller: str) -> dict[str, str]:
    return {"X-Caller-Id": caller}


def service(client: TestClient) -> Attachments:
    return client.app.state.services.attachments  # type: ignore[attr-defined]


def new_conversation(client: TestClient, caller: str) -> str:
    response = client.post(BASE, json={}, headers=as_(caller))
    assert response.status_code == 201, response.text
    return response.json()["conversationId"]


def declare(client: TestClient, caller: str, cid: str, name: str, content_type: str, size: int) -> dict:
    body = {"fileName": name, "contentType": content_type, "sizeBytes": size}
    response = client.post(f"{BASE}/{cid}/attachments", json=body, headers=as_(caller))
    assert response.status_code == 201, response.text
    return response.json()


def upload(client: TestClient, caller: str, cid: str, name: str, content_type: str, body: bytes) -> str:
    created = declare(client, caller, cid, name, content_type, len(body))
    response = post_upload(created["upload"], body, name)
    assert response.status_code == 204, response.text
    return created["attachmentId"]


def ensure(client: TestClient, caller: str, cid: str, aid: str) -> Attachment:
    return asyncio.run(service(client).ensure_processed(caller, cid, aid))


def status_of(client: TestClient, caller: str, cid: str, aid: str) -> dict:
    response = client.get(f"{BASE}/{cid}/attachments/{aid}", headers=as_(caller))
    assert response.status_code == 200, response.text
    return response.json()


def assert_error(response, status: int) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error", "message", "timestamp", "requestId"}
    return body


def texts(attachment: Attachment, modality: str) -> str:
    return "\n".join(s.text for s in attachment.segments if s.modality == modality)


def test_create_answers_a_presigned_post_pinned_to_the_key_type_and_size(client, caller):
    cid = new_conversation(client, caller)
    created = declare(client, caller, cid, "receipt.png", "image/png", 1234)
    assert created["status"] == "PENDING_UPLOAD"
    assert set(created) == {"attachmentId", "status", "upload", "expiresAt"}
    fields = created["upload"]["fields"]
    assert fields["key"] == f"attachments/{caller}/{cid}/{created['attachmentId']}"
    assert fields["Content-Type"] == "image/png"
    assert created["upload"]["url"].startswith(client.app.state.services.settings.aws_endpoint_url)  # type: ignore[attr-defined]
    pending = status_of(client, caller, cid, created["attachmentId"])
    assert pending == {
        "attachmentId": created["attachmentId"],
        "fileName": "receipt.png",
        "contentType": "image/png",
        "sizeBytes": 1234,
        "status": "PENDING_UPLOAD",
        "detail": None,
        "segments": [],
    }


def test_a_png_is_read_by_ocr_and_says_it_has_no_caption_engine(client, caller):
    cid = new_conversation(client, caller)
    png = render_png(["INVOICE 4711", "Paid by Alice Martin"])
    aid = upload(client, caller, cid, "invoice.png", "image/png", png)
    assert status_of(client, caller, cid, aid)["status"] == "PENDING_UPLOAD"  # locally no S3 event

    attachment = ensure(client, caller, cid, aid)

    assert attachment.status == "READY"
    ocr = texts(attachment, "image-ocr")
    assert "4711" in ocr and "Alice" in ocr and "Martin" in ocr
    assert attachment.detail == "image-caption: no engine configured"
    shown = status_of(client, caller, cid, aid)
    assert shown["status"] == "READY" and shown["sizeBytes"] == len(png)
    assert shown["segments"] == [{"modality": "image-ocr", "index": 0, "chars": len(ocr)}]


def test_a_pdf_and_a_docx_become_document_segments(client, caller):
    cid = new_conversation(client, caller)
    pdf = make_pdf(["Lighthouse maintenance log.", "The lamp was replaced on the third of March."])
    docx = make_docx(
        [("Safety", ["Wear a harness above two metres."]), ("Tools", ["Bring a torque wrench."])]
    )
    pdf_id = upload(client, caller, cid, "log.pdf", "application/pdf", pdf)
    docx_id = upload(client, caller, cid, "guide.docx", DOCX, docx)

    from_pdf = ensure(client, caller, cid, pdf_id)
    from_docx = ensure(client, caller, cid, docx_id)

    assert from_pdf.status == "READY" and from_pdf.detail is None
    assert "lamp was replaced" in texts(from_pdf, "document")
    assert [s.text for s in from_docx.segments] == [
        "Safety\nWear a harness above two metres.",
        "Tools\nBring a torque wrench.",
    ]
    assert [s.index for s in from_docx.segments] == [0, 1]


def test_spoken_english_is_transcribed(client, caller):
    cid = new_conversation(client, caller)
    aid = upload(client, caller, cid, "note.wav", "audio/wav", SPEECH_WAV.read_bytes())

    attachment = ensure(client, caller, cid, aid)

    assert attachment.status == "READY"
    transcript = texts(attachment, "audio")
    assert "quarterly" in transcript and "report" in transcript  # pocketsphinx hears these for sure


def test_processing_happens_once(client, caller):
    cid = new_conversation(client, caller)
    aid = upload(
        client, caller, cid, "notes.md", "text/markdown", b"# Notes\nShip on Friday.\n# Later\nRest."
    )
    first = ensure(client, caller, cid, aid)
    again = ensure(client, caller, cid, aid)
    assert first.status == "READY" and [s.text for s in first.segments] == [
        "# Notes\nShip on Friday.",
        "# Later\nRest.",
    ]
    assert again.updated_at == first.updated_at  # read from the store, not processed again


def test_corrupt_files_fail_with_a_safe_detail_and_a_turn_would_get_409(client, caller):
    cid = new_conversation(client, caller)
    broken_pdf = upload(
        client, caller, cid, "broken.pdf", "application/pdf", b"%PDF-1.4\n" + b"\x00garbage" * 40
    )
    not_png = upload(client, caller, cid, "photo.png", "image/png", b"GIF89a" + b"\x01" * 200)
    truncated = upload(client, caller, cid, "cut.png", "image/png", render_png(["HELLO"])[:300])

    for aid, detail in (
        (broken_pdf, "unreadable file: the PDF could not be parsed"),
        (not_png, "unreadable file: the file is not a valid image/png file"),
        (truncated, "unreadable file: the image could not be decoded"),
    ):
        with pytest.raises(AttachmentNotReady, match="could not be read"):
            ensure(client, caller, cid, aid)
        shown = status_of(client, caller, cid, aid)
        assert (shown["status"], shown["detail"], shown["segments"]) == ("FAILED", detail, [])


def test_an_upload_that_never_happened_is_409_and_stays_pending(client, caller):
    cid = new_conversation(client, caller)
    aid = declare(client, caller, cid, "later.txt", "text/plain", 10)["attachmentId"]
    with pytest.raises(AttachmentNotReady, match="has not been uploaded") as raised:
        ensure(client, caller, cid, aid)
    assert raised.value.status_code == 409
    assert status_of(client, caller, cid, aid)["status"] == "PENDING_UPLOAD"


def test_wrong_type_is_415_and_declared_too_large_413_and_nothing_is_written(client, caller):
    cid = new_conversation(client, caller)
    body = {"fileName": "x.gif", "contentType": "image/gif", "sizeBytes": 10}
    refused = assert_error(client.post(f"{BASE}/{cid}/attachments", json=body, headers=as_(caller)), 415)
    assert "image/png" in refused["message"] and "audio/webm" in refused["message"]
    body = {"fileName": "big.pdf", "contentType": "application/pdf", "sizeBytes": 20 * 1024 * 1024 + 1}
    assert (
        "20971520"
        in assert_error(client.post(f"{BASE}/{cid}/attachments", json=body, headers=as_(caller)), 413)[
            "message"
        ]
    )
    for name in ("../etc/passwd", "a\\b.txt", "x" * 256, ""):
        body = {"fileName": name, "contentType": "text/plain", "sizeBytes": 10}
        assert_error(client.post(f"{BASE}/{cid}/attachments", json=body, headers=as_(caller)), 422)
    # a control character is the body's text rule (docs/errors.md): 400, as in every chat body
    body = {"fileName": "bell\x07.txt", "contentType": "text/plain", "sizeBytes": 10}
    assert_error(client.post(f"{BASE}/{cid}/attachments", json=body, headers=as_(caller)), 400)
    # a field unknown or of another type is a 422, and a lone surrogate a 400, as in the chat bodies
    for bad, status in (
        ({"extra": 1}, 422),
        ({"sizeBytes": "10"}, 422),
        ({"sizeBytes": True}, 422),
        ({"sizeBytes": 10.0}, 422),
        ({"fileName": "a\ud800b.txt"}, 400),
    ):
        body = {"fileName": "n.txt", "contentType": "text/plain", "sizeBytes": 10} | bad
        sent = client.post(
            f"{BASE}/{cid}/attachments",
            content=json.dumps(body).encode(),
            headers={**as_(caller), "Content-Type": "application/json"},
        )
        assert_error(sent, status)
    # parameters and case do not matter; the pinned type is the plain one
    body = {"fileName": "n.txt", "contentType": "Text/Plain; charset=utf-8", "sizeBytes": 10}
    created = client.post(f"{BASE}/{cid}/attachments", json=body, headers=as_(caller)).json()
    assert created["upload"]["fields"]["Content-Type"] == "text/plain"


def test_a_deployer_can_narrow_the_allowed_types(aws_stack, caller, monkeypatch):
    monkeypatch.setenv("ATTACHMENT_ALLOWED_TYPES", "application/pdf,text/plain")
    client = TestClient(create_app(["conversations", "attachments"]))
    cid = new_conversation(client, caller)
    body = {"fileName": "photo.png", "contentType": "image/png", "sizeBytes": 10}
    refused = assert_error(client.post(f"{BASE}/{cid}/attachments", json=body, headers=as_(caller)), 415)
    assert refused["message"].endswith("allowed: application/pdf, text/plain")
    declare(client, caller, cid, "notes.txt", "text/plain", 10)


def test_s3_refuses_a_file_larger_than_the_policy_allows(aws_stack, caller, monkeypatch):
    monkeypatch.setenv("ATTACHMENT_MAX_BYTES", "1024")
    client = TestClient(create_app(["conversations", "attachments"]))
    cid = new_conversation(client, caller)
    created = declare(client, caller, cid, "small.txt", "text/plain", 100)  # declares little, sends more

    refused = post_upload(created["upload"], b"x" * 2048, "small.txt")
    assert refused.status_code == 400 and "<Code>EntityTooLarge</Code>" in refused.text
    other_key = {
        **created["upload"],
        "fields": {**created["upload"]["fields"], "key": f"attachments/{caller}/{cid}/other"},
    }
    assert post_upload(other_key, b"x" * 100, "x.txt").status_code == 403
    other_type = {**created["upload"], "fields": {**created["upload"]["fields"], "Content-Type": "text/html"}}
    assert post_upload(other_type, b"<p>" + b"x" * 93 + b"</p>", "x.html").status_code == 403
    assert status_of(client, caller, cid, created["attachmentId"])["status"] == "PENDING_UPLOAD"


def test_an_upload_is_exactly_its_declared_size_and_a_file_swapped_after_reading_is_never_used(
    aws_stack, caller
):
    client = TestClient(create_app(["conversations", "attachments", "chat"]))
    cid = new_conversation(client, caller)
    created = declare(client, caller, cid, "note.txt", "text/plain", 5)
    for wrong, code in ((b"hello!", "EntityTooLarge"), (b"hell", "EntityTooSmall")):
        refused = post_upload(created["upload"], wrong, "note.txt")
        assert refused.status_code == 400 and f"<Code>{code}</Code>" in refused.text
    assert post_upload(created["upload"], b"hello", "note.txt").status_code == 204
    aid = created["attachmentId"]
    read = ensure(client, caller, cid, aid)
    assert texts(read, "document") == "hello" and read.etag

    # The same form, still valid, uploads other bytes of the same size: never read, never handed on.
    assert post_upload(created["upload"], b"HOWDY", "note.txt").status_code == 204
    turn = {"message": "What does the note say?", "attachmentIds": [aid]}
    changed = assert_error(client.post(f"{BASE}/{cid}/messages", json=turn, headers=as_(caller)), 409)
    assert changed["error"] == "Attachment changed" and "replaced after it was read" in changed["message"]
    links = client.app.state.services.turn_attachments  # type: ignore[attr-defined]
    with pytest.raises(AttachmentChanged):
        asyncio.run(links.link(caller, cid, aid))  # an HTTP tool's presigned GET
    assert texts(ensure(client, caller, cid, aid), "document") == "hello"  # what was read stays


def test_another_caller_or_conversation_gets_404(client, caller):
    cid = new_conversation(client, caller)
    aid = upload(client, caller, cid, "a.txt", "text/plain", b"private words")
    other_cid = new_conversation(client, caller)
    intruder = f"intruder-{uuid.uuid4().hex[:6]}"

    assert_error(client.get(f"{BASE}/{cid}/attachments/{aid}", headers=as_(intruder)), 404)
    assert_error(client.get(f"{BASE}/{other_cid}/attachments/{aid}", headers=as_(caller)), 404)
    assert_error(client.get(f"{BASE}/{cid}/attachments/not-a-uuid", headers=as_(caller)), 404)
    assert_error(client.get(f"{BASE}/{cid}/attachments/{uuid.uuid4()}", headers=as_(caller)), 404)
    body = {"fileName": "x.txt", "contentType": "text/plain", "sizeBytes": 3}
    assert_error(client.post(f"{BASE}/{cid}/attachments", json=body, headers=as_(intruder)), 404)
    assert_error(client.post(f"{BASE}/{uuid.uuid4()}/attachments", json=body, headers=as_(caller)), 404)
    for who, conversation in ((intruder, cid), (caller, other_cid)):
        with pytest.raises(AttachmentNotFound):
            ensure(client, who, conversation, aid)
    assert ensure(client, caller, cid, aid).status == "READY"


def test_memory_storage_keeps_working_with_uploads_to_s3(aws_stack, caller, monkeypatch):
    monkeypatch.setenv("CONVERSATION_STORAGE", "memory")
    client = TestClient(create_app(["conversations", "attachments"]))
    cid = new_conversation(client, caller)
    aid = upload(client, caller, cid, "a.txt", "text/plain", b"kept in memory, uploaded to S3")
    assert texts(ensure(client, caller, cid, aid), "document") == "kept in memory, uploaded to S3"
    assert status_of(client, caller, cid, aid)["segments"] == [
        {"modality": "document", "index": 0, "chars": 30}
    ]
