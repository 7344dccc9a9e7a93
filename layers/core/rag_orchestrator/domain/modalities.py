"""What searchable text was made from: `text` (the knowledge base's documents, conversations) or an
attachment's segment (a parsed document, an image's OCR text or caption, an audio transcript)."""

from __future__ import annotations

from collections.abc import Sequence

from rag_orchestrator.domain.attachments import Modality

TEXT = "text"
ATTACHMENT_MODALITIES = tuple(m.value for m in Modality)
MODALITIES = (TEXT, *ATTACHMENT_MODALITIES)

ModalityFilter = str | Sequence[str]  # a search filter: one modality, or any of several
