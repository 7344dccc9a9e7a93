"""What searchable text was made from: `text` (the knowledge base's documents, conversations) or an
attachment's segment (a parsed document, an image's OCR text or caption, an audio transcript)."""

from __future__ import annotations

from collections.abc import Sequence

TEXT = "text"
ATTACHMENT_MODALITIES = ("document", "image-ocr", "image-caption", "audio")
MODALITIES = (TEXT, *ATTACHMENT_MODALITIES)

ModalityFilter = str | Sequence[str]  # a search filter: one modality, or any of several
