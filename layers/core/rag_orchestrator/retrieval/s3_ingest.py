"""Ingestion of objects created under `documents/` in the documents bucket (the IngestFunction's work).

The object key is the documentId, so uploading the same key again replaces the document's chunks.
Optional user metadata on the object sets the rest: `x-amz-meta-title`, `-source`, `-tags` (comma-separated).
"""

from __future__ import annotations

import io
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import unquote_plus

from rag_orchestrator.errors import RagError
from rag_orchestrator.observability import logger, metrics
from rag_orchestrator.retrieval.ingestion import ingest_documents
from rag_orchestrator.retrieval.knowledge_base import KnowledgeBase

PREFIX = "documents/"
TEXT_SUFFIXES = frozenset({".txt", ".md", ".markdown"})
PDF_SUFFIX = ".pdf"
MAX_OBJECT_BYTES = 50 * 1024 * 1024
DEFAULT_SOURCE = "documents-bucket"


class UnreadableDocument(Exception):
    """The object cannot become text: unsupported type, too large, not UTF-8, a broken or image-only PDF."""


class IngestRecordsFailed(RagError):
    error = "Ingestion failed"

    def __init__(self, failures: list[dict[str, str]]) -> None:
        keys = ", ".join(f["key"] for f in failures)
        super().__init__(f"{len(failures)} object(s) failed to ingest: {keys}")
        self.failures = failures


def ingest_s3_event(event: dict[str, Any], knowledge: KnowledgeBase, client: Any) -> dict[str, Any]:
    """Ingest every ObjectCreated record under `documents/` (read with the S3 `client`); raise after the
    others if any failed."""
    ingested: list[dict[str, Any]] = []
    skipped: list[str] = []
    failures: list[dict[str, str]] = []
    for record in event.get("Records") or []:
        s3 = record.get("s3") or {}
        bucket = (s3.get("bucket") or {}).get("name", "")
        key = unquote_plus((s3.get("object") or {}).get("key", ""))  # S3 events URL-encode keys
        if not str(record.get("eventName", "")).startswith("ObjectCreated") or not key.startswith(PREFIX):
            skipped.append(key)
            continue
        try:
            document = read_document(client, bucket, key)
            ingested.extend(ingest_documents([document], knowledge))
        except (UnreadableDocument, RagError) as exc:
            logger.error("object not ingested", extra={"bucket": bucket, "key": key, "reason": str(exc)})
            failures.append({"bucket": bucket, "key": key, "reason": str(exc)})
        except Exception as exc:  # one bad object must not stop the others; it is reported below
            logger.exception("object not ingested", extra={"bucket": bucket, "key": key})
            failures.append({"bucket": bucket, "key": key, "reason": type(exc).__name__})
    metrics.add_metric(name="DocumentsIngested", unit="Count", value=len(ingested))
    metrics.add_metric(name="ChunksIngested", unit="Count", value=sum(r["chunks"] for r in ingested))
    metrics.add_metric(name="DocumentsFailed", unit="Count", value=len(failures))
    if failures:
        # Raising hands the event to Lambda's retries and then the OnFailure queue: reported, not lost.
        raise IngestRecordsFailed(failures)
    return {"ingested": ingested, "skipped": skipped}


def read_document(client: Any, bucket: str, key: str) -> dict[str, Any]:
    """The object as an ingestion document: text extracted, documentId = key, metadata from the object."""
    suffix = PurePosixPath(key).suffix.lower()
    if suffix not in TEXT_SUFFIXES and suffix != PDF_SUFFIX:
        raise UnreadableDocument(f"unsupported file type {suffix or '(none)'}")
    obj = client.get_object(Bucket=bucket, Key=key)
    if obj.get("ContentLength", 0) > MAX_OBJECT_BYTES:
        raise UnreadableDocument(f"object larger than {MAX_OBJECT_BYTES} bytes")
    body = obj["Body"].read()
    meta = {k.lower(): v for k, v in (obj.get("Metadata") or {}).items()}
    text, pdf_title = extract_pdf(body) if suffix == PDF_SUFFIX else (decode_text(body), None)
    if not text.strip():
        raise UnreadableDocument("no text in the object")
    return {
        "documentId": key,
        "title": meta.get("title") or pdf_title or title_from(key, text if suffix != PDF_SUFFIX else ""),
        "text": text,
        "source": meta.get("source") or DEFAULT_SOURCE,
        "tags": [t.strip() for t in meta.get("tags", "").split(",") if t.strip()],
    }


def decode_text(body: bytes) -> str:
    try:
        return body.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UnreadableDocument("text is not UTF-8") from None


def extract_pdf(body: bytes) -> tuple[str, str | None]:
    """The text of every page (blank-line separated) and the PDF's own title, if it has one."""
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(body))
        pages = [(page.extract_text() or "").strip() for page in reader.pages]
        title = (reader.metadata.title if reader.metadata else None) or None
    except (PyPdfError, ValueError, KeyError, TypeError) as exc:
        raise UnreadableDocument(f"unreadable PDF ({type(exc).__name__})") from None
    text = "\n\n".join(page for page in pages if page)
    if not text:
        raise UnreadableDocument("PDF has no extractable text (scanned images need OCR)")
    return text, title


def title_from(key: str, text: str) -> str:
    """A Markdown document's first heading, else the file name without its extension."""
    for line in text.splitlines()[:20]:
        if line.startswith("# "):
            return line[2:].strip()
    return PurePosixPath(key).stem.replace("-", " ").replace("_", " ").strip() or key
