"""The S3-triggered IngestFunction, loaded like Lambda loads it, on a moto-server bucket and a real Chroma."""

from __future__ import annotations

import uuid
from urllib.parse import quote_plus

import pytest

from devserver.invoke import LambdaContext, load_handler_module
from rag_orchestrator.api.deps import process_aws
from rag_orchestrator.config import load_settings
from rag_orchestrator.retrieval.registry import DynamoDocumentRegistry
from rag_orchestrator.retrieval.s3_ingest import IngestRecordsFailed
from tests.fakes.pdf import make_pdf
from tests.integration.knowledge import knowledge, search

pytestmark = pytest.mark.integration

MARKDOWN = """# Tide tables

The harbour publishes tide tables every month.

High water at the pier comes about fifty minutes later each day, following the moon.
"""


@pytest.fixture
def stack(
    aws_stack: dict[str, str], own_tables: dict[str, str], chroma_url: str, monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    """The documents bucket, a table of the test's own (for the document registry), a fresh collection."""
    monkeypatch.setenv("CHROMA_COLLECTION", f"test-{uuid.uuid4().hex[:12]}")
    return aws_stack


def put(bucket: str, key: str, body: bytes, **metadata: str) -> None:
    process_aws().client("s3").put_object(Bucket=bucket, Key=key, Body=body, Metadata=metadata)


def s3_event(bucket: str, *keys: str, event_name: str = "ObjectCreated:Put") -> dict:
    return {
        "Records": [
            {
                "eventVersion": "2.1",
                "eventSource": "aws:s3",
                "eventName": event_name,
                "s3": {"bucket": {"name": bucket}, "object": {"key": quote_plus(key), "size": 1}},
            }
            for key in keys
        ]
    }


def invoke(event: dict) -> dict:
    module = load_handler_module("ingest")  # a fresh import per invocation, like a cold start
    return module.handler(event, LambdaContext(function_name="rag-orchestrator-ingest"))


def test_markdown_and_pdf_are_ingested_and_a_bad_object_fails_the_invocation(stack):
    bucket = stack["DOCUMENTS_BUCKET"]
    pdf = make_pdf(
        ["Annual lighthouse report.", "The lighthouse keeper logged forty storms and two shipwrecks."],
        title="Lighthouse Report",
    )
    put(
        bucket,
        "documents/harbour/tide tables.md",
        MARKDOWN.encode(),
        source="harbour-office",
        tags="tides, harbour",
    )
    put(bucket, "documents/lighthouse report.pdf", pdf)
    put(bucket, "documents/broken.pdf", b"%PDF-1.4\nthis is not really a pdf")
    put(bucket, "documents/photo.png", b"\x89PNG\r\n")
    event = s3_event(
        bucket,
        "documents/harbour/tide tables.md",
        "documents/broken.pdf",
        "documents/lighthouse report.pdf",
        "documents/photo.png",
        "elsewhere/ignored.md",
    )

    with pytest.raises(IngestRecordsFailed) as raised:
        invoke(event)

    assert sorted(f["key"] for f in raised.value.failures) == ["documents/broken.pdf", "documents/photo.png"]
    assert "unsupported file type .png" in {f["reason"] for f in raised.value.failures}
    settings = load_settings()
    store = knowledge(settings).store
    assert store.count("documents/harbour/tide tables.md") == 1
    assert store.count("documents/lighthouse report.pdf") == 1
    assert store.count() == 2

    [md] = search("when is high water at the pier", top_k=1, threshold=0.0, settings=settings)
    assert (md.document_id, md.title, md.source, md.tags) == (
        "documents/harbour/tide tables.md",
        "Tide tables",
        "harbour-office",
        ["tides", "harbour"],
    )
    [pdf_passage] = search("lighthouse keeper storms", top_k=1, threshold=0.0, settings=settings)
    assert pdf_passage.document_id == "documents/lighthouse report.pdf"
    assert pdf_passage.title == "Lighthouse Report"
    assert "forty storms" in pdf_passage.text

    # Listed in the registry the documents routes read, in the conversations table (moto server).
    listed, more = knowledge(settings).registry.page(None, 10)
    assert [(d.document_id, d.title, d.source, d.tags, d.chunks) for d in listed] == [
        ("documents/harbour/tide tables.md", "Tide tables", "harbour-office", ["tides", "harbour"], 1),
        ("documents/lighthouse report.pdf", "Lighthouse Report", "documents-bucket", [], 1),
    ]
    assert not more and isinstance(knowledge(settings).registry, DynamoDocumentRegistry)


def test_a_clean_event_returns_what_was_ingested_and_reuploads_replace(stack):
    bucket = stack["DOCUMENTS_BUCKET"]
    put(bucket, "documents/notes.txt", ("Release notes. " * 200).encode())
    first = invoke(s3_event(bucket, "documents/notes.txt", "other/skip.txt"))
    assert first["skipped"] == ["other/skip.txt"]
    [ingested] = first["ingested"]
    assert ingested["documentId"] == "documents/notes.txt"
    assert ingested["chunks"] > 1

    put(bucket, "documents/notes.txt", b"Short release notes.")
    second = invoke(s3_event(bucket, "documents/notes.txt"))
    assert second["ingested"] == [{"documentId": "documents/notes.txt", "chunks": 1}]
    assert knowledge(load_settings()).store.count("documents/notes.txt") == 1


def test_a_missing_object_is_reported_not_lost(stack):
    with pytest.raises(IngestRecordsFailed, match=r"documents/gone\.md"):
        invoke(s3_event(stack["DOCUMENTS_BUCKET"], "documents/gone.md"))
