"""AttachmentFunction, loaded like Lambda loads it, on S3 events for uploads to the moto server."""

from __future__ import annotations

import asyncio
import uuid
from urllib.parse import quote_plus

import pytest

from devserver.invoke import LambdaContext, load_handler_module
from rag_orchestrator.api.deps import process_aws
from rag_orchestrator.attachments.events import AttachmentRecordsFailed, process_event
from rag_orchestrator.config import load_settings
from rag_orchestrator.domain.attachments import Attachment, CreateAttachmentRequest
from rag_orchestrator.domain.conversations import Conversation
from tests.fakes.attachments import post_upload
from tests.fakes.pdf import make_pdf
from tests.integration.knowledge import attachments as build_attachments
from tests.integration.knowledge import memory

pytestmark = pytest.mark.integration


def s3_event(bucket: str, *keys: str, event_name: str = "ObjectCreated:Post") -> dict:
    return {
        "Records": [
            {
                "eventSource": "aws:s3",
                "eventName": event_name,
                "s3": {"bucket": {"name": bucket}, "object": {"key": quote_plus(key), "size": 1}},
            }
            for key in keys
        ]
    }


def invoke(event: dict) -> dict:
    module = load_handler_module("attachments")  # a fresh import per invocation, like a cold start
    return module.handler(event, LambdaContext(function_name="rag-orchestrator-attachments"))


def conversations():
    from rag_orchestrator.conversations.factory import create_store

    return create_store(load_settings(), process_aws())


def declared(
    caller: str, file_name: str, content_type: str, body: bytes, *, upload: bool = True
) -> Attachment:
    """An attachment created as the API creates it, in a new conversation of the caller's, uploaded by POST."""
    attachments = build_attachments()
    conversation_id = asyncio.run(conversations().create(Conversation(caller_id=caller))).conversation_id
    request = CreateAttachmentRequest(file_name=file_name, content_type=content_type, size_bytes=len(body))
    created = asyncio.run(attachments.create(caller, conversation_id, request))
    if upload:
        assert post_upload(created.upload.model_dump(), body, file_name).status_code == 204
    return asyncio.run(attachments.get(caller, conversation_id, created.attachment_id))


def stored(attachment: Attachment) -> Attachment:
    attachments = build_attachments()
    return asyncio.run(
        attachments.get(attachment.caller_id, attachment.conversation_id, attachment.attachment_id)
    )


def fragments(attachment: Attachment) -> list[dict]:
    """The attachment's entries in conversation memory: metadata, by chunkIndex."""
    found = memory(load_settings()).store.entries({"attachmentId": attachment.attachment_id})
    return sorted((row.metadata for row in found), key=lambda m: m["chunkIndex"])


def test_an_upload_event_reads_the_file_once(aws_stack, chroma_url):
    bucket = aws_stack["ATTACHMENTS_BUCKET"]
    pdf = declared(
        "caller|with/odd chars", "report.pdf", "application/pdf", make_pdf(["Quarterly revenue grew."])
    )
    notes = declared("bob", "notes.txt", "text/plain", "Café at nine".encode())

    result = invoke(s3_event(bucket, pdf.key, notes.key, "documents/elsewhere.md"))

    assert sorted(result["processed"], key=lambda r: r["attachmentId"]) == sorted(
        [{"attachmentId": a.attachment_id, "status": "READY"} for a in (pdf, notes)],
        key=lambda r: r["attachmentId"],
    )
    assert result["skipped"] == ["documents/elsewhere.md"]
    assert [s.text for s in stored(pdf).segments] == ["Quarterly revenue grew."]
    assert [s.text for s in stored(notes).segments] == ["Café at nine"]
    first = stored(notes).updated_at
    again = invoke(s3_event(bucket, notes.key))  # S3 delivers at least once
    assert again["processed"] == [{"attachmentId": notes.attachment_id, "status": "READY"}]
    assert stored(notes).updated_at == first
    (entry,) = fragments(notes)  # indexed as Bob's conversation memory, again idempotently
    assert {k: entry[k] for k in ("source", "callerId", "conversationId", "attachmentId", "chunkIndex")} == {
        "source": "document",
        "callerId": "bob",
        "conversationId": notes.conversation_id,
        "attachmentId": notes.attachment_id,
        "chunkIndex": 0,
    }


def test_segments_that_could_not_be_indexed_fail_the_invocation_and_a_retry_indexes_them(
    aws_stack, chroma_url, monkeypatch
):
    notes = declared("dora", "notes.md", "text/markdown", b"# Notes\nShip on Friday.\n# Later\nRest.")
    event = s3_event(aws_stack["ATTACHMENTS_BUCKET"], notes.key)
    monkeypatch.setenv("CHROMA_URL", "http://127.0.0.1:9")  # Chroma down while the file is read
    with pytest.raises(AttachmentRecordsFailed, match="1 attachment"):
        invoke(event)
    assert stored(notes).status == "READY"
    monkeypatch.setenv("CHROMA_URL", chroma_url)  # Lambda's retry, in a container of its own
    assert fragments(notes) == []
    again = asyncio.run(process_event(build_attachments(), event))
    assert again["processed"] == [{"attachmentId": notes.attachment_id, "status": "READY"}]
    assert [(m["chunkIndex"], m["source"]) for m in fragments(notes)] == [(0, "document"), (1, "document")]


@pytest.mark.parametrize("change", ["deleted", "made temporary"])
def test_a_file_whose_conversation_is_deleted_or_made_temporary_before_its_upload_leaves_no_memory(
    aws_stack, chroma_url, change
):
    """The upload form outlives the conversation's delete (ATTACHMENT_URL_TTL_SECONDS), and a PATCH to
    a temporary chat does not change a file declared before it: the file is still read, but its
    segments were indexed into the caller's memory, recallable in their other conversations."""
    notes = declared(
        "erin", "plan.txt", "text/plain", b"Secret plan: ship the rocket on Friday.", upload=False
    )
    store = conversations()
    if change == "deleted":
        asyncio.run(store.soft_delete(notes.conversation_id, "erin"))
    else:
        asyncio.run(store.update(notes.conversation_id, "erin", memory=False))
    upload = build_attachments().objects.presign_post(notes.key, "text/plain", 39, 300)
    assert post_upload(upload, b"Secret plan: ship the rocket on Friday.", "plan.txt").status_code == 204
    result = invoke(s3_event(aws_stack["ATTACHMENTS_BUCKET"], notes.key))
    assert result["processed"] == [{"attachmentId": notes.attachment_id, "status": "READY"}]
    assert fragments(notes) == []


def test_objects_without_an_attachment_are_skipped(aws_stack):
    bucket = aws_stack["ATTACHMENTS_BUCKET"]
    orphan = f"attachments/nobody/{uuid.uuid4()}/{uuid.uuid4()}"
    process_aws().client("s3").put_object(Bucket=bucket, Key=orphan, Body=b"x")
    assert invoke(s3_event(bucket, orphan, "attachments/too-short")) == {
        "processed": [],
        "skipped": [orphan, "attachments/too-short"],
    }


def test_a_storage_failure_fails_the_invocation_for_a_retry(aws_stack, monkeypatch):
    monkeypatch.setenv(
        "CONVERSATIONS_TABLE", "no-such-table"
    )  # DynamoDB refuses: Lambda retries, then the DLQ
    key = f"attachments/carol/{uuid.uuid4()}/{uuid.uuid4()}"
    with pytest.raises(AttachmentRecordsFailed, match="1 attachment"):
        invoke(s3_event(aws_stack["ATTACHMENTS_BUCKET"], key))
