"""Attachments (docs/attachments.md): files a caller uploads to a conversation, read into text segments."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from datetime import datetime
from enum import StrEnum
from typing import Literal

from pydantic import Field, StrictInt, field_validator

from rag_orchestrator.domain.base import CamelModel, new_id, utcnow
from rag_orchestrator.domain.caller_keys import owned_by
from rag_orchestrator.domain.text import ClientBody, plain_label

Kind = Literal["image", "audio", "document"]

# The content types an upload may declare, and what kind of file each is.
CONTENT_TYPES: dict[str, Kind] = {
    "image/png": "image",
    "image/jpeg": "image",
    "image/webp": "image",
    "audio/wav": "audio",
    "audio/x-wav": "audio",
    "audio/wave": "audio",
    "audio/mpeg": "audio",
    "audio/mp4": "audio",
    "audio/x-m4a": "audio",
    "audio/ogg": "audio",
    "audio/webm": "audio",
    "application/pdf": "document",
    "text/plain": "document",
    "text/markdown": "document",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "document",
}

KEY_PREFIX = "attachments/"
MAX_FILE_NAME_CHARS = 255
MAX_PER_TURN = 10  # attachmentIds of one chat request
ATTACHMENT_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


class Modality(StrEnum):
    DOCUMENT = "document"
    IMAGE_OCR = "image-ocr"
    IMAGE_CAPTION = "image-caption"
    AUDIO = "audio"


class AttachmentStatus(StrEnum):
    PENDING_UPLOAD = "PENDING_UPLOAD"
    PROCESSING = "PROCESSING"
    READY = "READY"
    FAILED = "FAILED"


FINAL = frozenset({AttachmentStatus.READY, AttachmentStatus.FAILED})


def media_type(content_type: str) -> str:
    """`Text/Plain; charset=utf-8` -> `text/plain`: the part the allowed list names."""
    return content_type.split(";", 1)[0].strip().lower()


def conversation_prefix(caller_id: str, conversation_id: str) -> str:
    """Where a conversation's attachment files live in the attachments bucket (purged with it)."""
    return f"{KEY_PREFIX}{caller_id}/{conversation_id}/"


def object_key(caller_id: str, conversation_id: str, attachment_id: str) -> str:
    return conversation_prefix(caller_id, conversation_id) + attachment_id


def files_of(caller_id: str) -> Callable[[str], bool]:
    """Whether a key is one of the caller's files exactly: under `attachments/<callerId>/` (and under a
    conversation's prefix) lie the files of a caller `<callerId>/b` (or `<callerId>/<conversationId>`) too."""
    return owned_by(caller_id, KEY_PREFIX, 2)


def citation_document(attachment_id: str) -> str:
    """The documentId an attachment's segments are cited and indexed under: `attachment:<attachmentId>`."""
    return f"attachment:{attachment_id}"


def well_formed_ids(values: Iterable[str]) -> list[str]:
    """Ids as a chat request names them: well-formed (lower-cased), each once, at most MAX_PER_TURN."""
    ids: list[str] = []
    for value in values:
        value = value.strip().lower()
        if not ATTACHMENT_ID.fullmatch(value):
            raise ValueError(f"{value[:40]!r} is not an attachment id")
        if value not in ids:
            ids.append(value)
    if len(ids) > MAX_PER_TURN:
        raise ValueError(f"at most {MAX_PER_TURN} attachments per message")
    return ids


class Segment(CamelModel):
    """Text read from an attachment; `index` orders the segments of one modality (pages, sections)."""

    modality: Modality
    text: str
    index: int = Field(ge=0)


class Attachment(CamelModel):
    attachment_id: str = Field(default_factory=new_id)
    conversation_id: str
    caller_id: str
    file_name: str
    content_type: str
    size_bytes: int  # declared at creation; the stored object's size once processed
    status: AttachmentStatus = AttachmentStatus.PENDING_UPLOAD
    detail: str | None = None  # why it FAILED, or which modality yielded nothing (safe to show)
    segments: list[Segment] = Field(default_factory=list)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    lease_until: int | None = None  # while PROCESSING: when another worker may take over (epoch s)
    # The object processing read (its ETag, and version in a versioned bucket): the attachment is
    # those bytes; another object at its key is never read or handed to a tool (docs/attachments.md).
    etag: str | None = None
    version_id: str | None = None
    remembered: bool = True  # false: declared in a temporary chat, its segments are never indexed

    @property
    def kind(self) -> Kind:
        return CONTENT_TYPES[self.content_type]

    @property
    def key(self) -> str:
        return object_key(self.caller_id, self.conversation_id, self.attachment_id)

    def numbered_segments(self) -> list[tuple[int, Segment]]:
        """The segments with text, each with its chunkIndex: its place among all the attachment's
        segments, so an image's OCR text and caption (both `index` 0) are cited apart."""
        return [(number, s) for number, s in enumerate(self.segments) if s.text.strip()]


class CreateAttachmentRequest(ClientBody):
    """The declare body: a field unknown, or of another type (`"10"` for a size), is a 422; a string
    breaking the text rule (a lone surrogate) a 400, as in every chat body."""

    model_config = ClientBody.model_config | {"extra": "forbid"}

    file_name: str = Field(min_length=1, max_length=MAX_FILE_NAME_CHARS)
    content_type: str = Field(min_length=1, max_length=255)
    size_bytes: StrictInt = Field(ge=1)

    @field_validator("file_name")
    @classmethod
    def _plain_file_name(cls, value: str) -> str:
        if "/" in value or "\\" in value or value.strip() in ("", ".", ".."):
            raise ValueError("must be a file name, without a path")
        if any(unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in value):
            raise ValueError("must not contain control characters")
        return plain_label(value)


class UploadForm(CamelModel):
    """A presigned S3 POST: send `fields` and then the file (field `file`) as multipart/form-data to `url`."""

    url: str
    fields: dict[str, str]


class CreatedAttachment(CamelModel):
    attachment_id: str
    status: AttachmentStatus
    upload: UploadForm
    expires_at: datetime


class SegmentSummary(CamelModel):
    modality: Modality
    index: int
    chars: int


class AttachmentResponse(CamelModel):
    attachment_id: str
    file_name: str
    content_type: str
    size_bytes: int
    status: AttachmentStatus
    detail: str | None = None
    segments: list[SegmentSummary]

    @classmethod
    def of(cls, attachment: Attachment) -> AttachmentResponse:
        return cls(
            attachment_id=attachment.attachment_id,
            file_name=attachment.file_name,
            content_type=attachment.content_type,
            size_bytes=attachment.size_bytes,
            status=attachment.status,
            detail=attachment.detail,
            segments=[
                SegmentSummary(modality=s.modality, index=s.index, chars=len(s.text))
                for s in attachment.segments
            ],
        )
