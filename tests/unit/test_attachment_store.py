"""The AttachmentStore contract, on both stores (DynamoDB on moto in-process), and the service's lease
logic with a stand-in bucket (which is all an AttachmentObjects is to it here)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from rag_orchestrator.attachments.dynamo_store import DynamoAttachmentStore
from rag_orchestrator.attachments.engines import Engines
from rag_orchestrator.attachments.in_process_store import InProcessAttachmentStore
from rag_orchestrator.attachments.objects import StoredObject
from rag_orchestrator.attachments.service import Attachments, parse_key
from rag_orchestrator.config import load_settings
from rag_orchestrator.domain.attachments import Attachment, AttachmentStatus, Segment
from rag_orchestrator.errors import AttachmentNotFound, AttachmentNotReady
from tests.fakes.moto_aws import mocked_aws

TABLE, BUCKET = "conversations-attachments", "transcripts-attachments"
READY, PROCESSING = AttachmentStatus.READY, AttachmentStatus.PROCESSING


@pytest.fixture(params=["memory", "dynamodb"])
def store(request, monkeypatch) -> Iterator[object]:
    if request.param == "memory":
        yield InProcessAttachmentStore()
        return
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mocked_aws(TABLE, BUCKET) as (dynamodb, s3):
        yield DynamoAttachmentStore(TABLE, BUCKET, dynamodb=dynamodb, s3=s3)


def new(**fields) -> Attachment:
    values = {
        "conversation_id": "c1",
        "caller_id": "alice",
        "file_name": "a.txt",
        "content_type": "text/plain",
        "size_bytes": 5,
    }
    return Attachment(**(values | fields))


def run(coroutine):
    return asyncio.run(coroutine)


def test_only_the_owner_reads_an_attachment_in_its_conversation(store):
    attachment = new()
    run(store.create(attachment))
    assert run(store.get("c1", attachment.attachment_id, "alice")) == attachment
    for conversation, caller in (("c1", "mallory"), ("c2", "alice")):
        with pytest.raises(AttachmentNotFound):
            run(store.get(conversation, attachment.attachment_id, caller))


def test_one_worker_holds_the_lease_until_it_runs_out(store):
    attachment = new()
    run(store.create(attachment))
    assert run(store.claim(attachment, 100, 200)) is True
    assert run(store.claim(attachment, 150, 250)) is False  # held
    assert run(store.get("c1", attachment.attachment_id, "alice")).status is PROCESSING
    assert run(store.claim(attachment, 201, 300)) is True  # the first worker died: taken over
    done = attachment.model_copy(
        update={"status": READY, "segments": [Segment(modality="document", text="hi", index=0)]}
    )
    assert run(store.finish(done)) is True
    assert run(store.finish(done)) is False  # only from PROCESSING
    assert run(store.claim(attachment, 10**9, 10**9 + 1)) is False  # READY is final
    assert run(store.get("c1", attachment.attachment_id, "alice")).segments == done.segments


def test_large_segments_round_trip(store):
    attachment = new()
    run(store.create(attachment))
    run(store.claim(attachment, 0, 10))
    pages = [Segment(modality="document", text=f"{i}" * 100_000, index=i) for i in range(5)]  # 500 KB
    run(store.finish(attachment.model_copy(update={"status": READY, "segments": pages})))
    assert run(store.get("c1", attachment.attachment_id, "alice")).segments == pages


class Bucket:
    """Stands in for AttachmentObjects: what HEAD and GET answer."""

    bucket = "files"

    def __init__(self, body: bytes | None) -> None:
        self.body = body

    def head(self, key: str) -> StoredObject | None:
        return None if self.body is None else StoredObject(len(self.body), "text/plain", '"etag-1"')

    def read(self, key: str, pinned: StoredObject | None = None) -> bytes:
        assert self.body is not None and pinned is not None and pinned.etag == '"etag-1"'
        return self.body


def service(store: InProcessAttachmentStore, body: bytes | None, now: float = 1000.0) -> Attachments:
    settings = load_settings(attachments_bucket="files", attachment_processing_timeout_seconds=60)
    return Attachments(store, Bucket(body), settings, engines=Engines, clock=lambda: now)  # type: ignore[arg-type]


def test_a_file_another_worker_is_reading_is_waited_for_then_taken_over_when_its_lease_ends():
    store = InProcessAttachmentStore()
    attachment = new()
    run(store.create(attachment))
    run(store.claim(attachment, 990, 1100))  # someone else, until 1100
    busy = service(store, b"hello")
    with pytest.raises(AttachmentNotReady, match="still being processed"):
        run(busy.ensure_processed("alice", "c1", attachment.attachment_id, wait_seconds=0))
    later = service(store, b"hello", now=1101)
    assert [
        s.text for s in run(later.ensure_processed("alice", "c1", attachment.attachment_id)).segments
    ] == ["hello"]


def test_the_stored_objects_size_and_type_are_checked_and_what_was_read_is_pinned():
    store = InProcessAttachmentStore()
    large, retyped, resized = new(), new(content_type="text/markdown", size_bytes=19), new(size_bytes=4)
    for attachment in (large, retyped, resized):
        run(store.create(attachment))
    settings = load_settings(attachments_bucket="files", attachment_max_bytes=20)
    strict = Attachments(store, Bucket(b"x" * 30), settings, engines=Engines)  # type: ignore[arg-type]
    with pytest.raises(AttachmentNotReady, match="too large: the file is larger than 20 bytes"):
        run(strict.ensure_processed("alice", "c1", large.attachment_id))
    lenient = service(store, b"# plain text really")
    with pytest.raises(AttachmentNotReady, match="unsupported content: the uploaded file's type differs"):
        run(lenient.ensure_processed("alice", "c1", retyped.attachment_id))
    with pytest.raises(AttachmentNotReady, match="the file is 5 bytes, not the 4 declared"):
        run(service(store, b"hello").ensure_processed("alice", "c1", resized.attachment_id))
    read = run(service(store, b"hello").ensure_processed("alice", "c1", new_ready(store).attachment_id))
    assert (read.etag, read.size_bytes) == ('"etag-1"', 5)  # the object processing read


def new_ready(store: InProcessAttachmentStore) -> Attachment:
    attachment = new()
    run(store.create(attachment))
    return attachment


def test_object_keys_name_their_attachment():
    assert parse_key("attachments/auth0|42/c1/a1") == ("auth0|42", "c1", "a1")
    assert parse_key("attachments/with/slash/c1/a1") == ("with/slash", "c1", "a1")
    assert parse_key("attachments/c1/a1") is None
    assert parse_key("documents/x/c1/a1") is None
