"""Conversation memory: the caller's own fragments, in a Chroma collection apart from the knowledge base.

A fragment is a completed turn's question and answer (source `conversation`, modality `text`), or one
segment of an attachment (source and modality: `document`, `image-ocr`, `image-caption` or `audio`).
Fragments live in CHROMA_MEMORY_COLLECTION and never in CHROMA_COLLECTION, so `/api/v1/query` and the
answer endpoint cannot find one; `rag_search` queries both, this one with `where callerId == caller`.

Metadata of every fragment: `documentId` and `chunkIndex` (its citation), `title`, `source`, `modality`,
`conversationId`, `callerId`, `createdAt`; a turn's also `messageId` (the answer's), a segment's
`attachmentId` and `index`. Ids are deterministic: indexing the same turn or segment again replaces it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import TYPE_CHECKING

from rag_orchestrator.config import Settings
from rag_orchestrator.domain.attachments import citation_document
from rag_orchestrator.domain.modalities import ATTACHMENT_MODALITIES, TEXT, ModalityFilter
from rag_orchestrator.domain.passages import CITATION, Passage
from rag_orchestrator.retrieval.chunking import Chunk
from rag_orchestrator.retrieval.vector_store import VectorStore
from rag_orchestrator.sanitize import MAX_TITLE, sanitize_metadata, truncate

if TYPE_CHECKING:
    from rag_orchestrator.retrieval.embedders import Embedder

CONVERSATION = "conversation"
MAX_FRAGMENT_CHARS = 8000  # one vector per fragment: longer texts are for the caller to segment
MAX_QUESTION_CHARS = 2000
MAX_ANSWER_CHARS = 4000

_CITATION = re.compile(r"[ \t]*" + CITATION.pattern)


@dataclass(frozen=True, slots=True)
class Fragment:
    """One piece of a caller's own material, cited as `[source:<document_id>#<index>]`."""

    caller_id: str
    conversation_id: str
    document_id: str  # conversation:<conversationId> or attachment:<attachmentId>
    index: int
    source: str  # `conversation`, or the attachment segment's modality
    modality: str
    title: str
    text: str
    created_at: datetime
    message_id: str | None = None  # a turn's answer
    attachment_id: str | None = None

    @property
    def id(self) -> str:
        # A turn's id holds its answer's message id, so two turns in one millisecond stay apart.
        return f"{self.document_id}#{self.message_id or self.index}"

    def chunk(self) -> Chunk:
        metadata: dict[str, object] = {
            "documentId": self.document_id,
            "chunkIndex": self.index,
            "title": sanitize_metadata(self.title, MAX_TITLE),
            "source": self.source,
            "modality": self.modality,
            "conversationId": self.conversation_id,
            "callerId": self.caller_id,
            "createdAt": self.created_at.astimezone(UTC).isoformat().replace("+00:00", "Z"),
        }
        if self.message_id:
            metadata["messageId"] = self.message_id
        if self.attachment_id:
            metadata |= {"attachmentId": self.attachment_id, "index": self.index}
        return Chunk(self.id, self.text, metadata)


def conversation_fragment(
    *,
    conversation_id: str,
    caller_id: str,
    message_id: str,
    question: str,
    answer: str,
    created_at: datetime,
) -> Fragment:
    """A completed turn: the user's message and the answer (`message_id`, `created_at`), citations removed.

    Its chunkIndex is the answer's time in milliseconds: unique in the conversation, and stable."""
    question, answer = question.strip(), _CITATION.sub("", answer).strip()
    return Fragment(
        caller_id=caller_id,
        conversation_id=conversation_id,
        document_id=f"{CONVERSATION}:{conversation_id}",
        index=int(created_at.timestamp() * 1000),
        source=CONVERSATION,
        modality=TEXT,
        title=f"Earlier conversation ({created_at:%Y-%m-%d}): {question}",
        text=f"Question: {truncate(question, MAX_QUESTION_CHARS)}\nAnswer: {truncate(answer, MAX_ANSWER_CHARS)}",
        created_at=created_at,
        message_id=message_id,
    )


def attachment_segment(
    *,
    conversation_id: str,
    caller_id: str,
    attachment_id: str,
    file_name: str,
    modality: str,
    index: int,
    text: str,
    created_at: datetime,
) -> Fragment:
    """One text segment of an attachment, cited as `[source:attachment:<attachmentId>#<index>]`."""
    if modality not in ATTACHMENT_MODALITIES:
        raise ValueError(f"modality must be one of {', '.join(ATTACHMENT_MODALITIES)}, got {modality!r}")
    return Fragment(
        caller_id=caller_id,
        conversation_id=conversation_id,
        document_id=citation_document(attachment_id),
        index=index,
        source=modality,
        modality=modality,
        title=f"{file_name} ({modality})",
        text=text,
        created_at=created_at,
        attachment_id=attachment_id,
    )


class FragmentIndex:
    """CHROMA_MEMORY_COLLECTION: add fragments, search one caller's, forget a conversation's. Blocking calls.

    Without an embedder it only forgets (`fragment_eraser`)."""

    def __init__(self, store: VectorStore, embedder: Embedder | None) -> None:
        self.store = store
        self.embedder = embedder

    def add(self, fragments: Sequence[Fragment]) -> None:
        """Embed (one batch) and upsert; a fragment indexed again replaces its entry."""
        if self.embedder is None:
            raise ValueError("this fragment index only forgets: it has no embedder")
        for fragment in fragments:
            if not fragment.text.strip() or len(fragment.text) > MAX_FRAGMENT_CHARS:
                raise ValueError(
                    f"fragment {fragment.id}: text must have 1 to {MAX_FRAGMENT_CHARS} characters"
                )
        if fragments:
            vectors = self.embedder.embed_batch([f.text for f in fragments])
            self.store.upsert([f.chunk() for f in fragments], vectors)

    def query(
        self,
        vector: Sequence[float],
        caller_id: str,
        top_k: int,
        *,
        source: str | None = None,
        tags: Sequence[str] | None = None,
        modality: ModalityFilter | None = None,
    ) -> list[Passage]:
        """The caller's `top_k` nearest fragments, best first; the caller is a filter in Chroma."""
        return self.store.query(
            vector, top_k, caller_id=caller_id, source=source, tags=tags, modality=modality
        )

    def forget_messages(self, message_ids: Sequence[str]) -> None:
        """Delete the fragments of these answers (earlier versions, once superseded)."""
        if message_ids:
            self.store.delete({"messageId": {"$in": list(message_ids)}})

    def forget_conversation(self, conversation_id: str) -> None:
        """Delete every fragment of the conversation: its turns and its attachments' segments."""
        self.store.delete({"conversationId": conversation_id})

    def of_caller(self, caller_id: str) -> list[dict[str, object]]:
        """Every fragment of the caller, `{id, text, metadata}` (an export)."""
        return self.store.entries({"callerId": caller_id})

    def forget_caller(self, caller_id: str) -> int:
        """Delete every fragment of the caller (an erasure); how many there were."""
        where = {"callerId": caller_id}
        found = self.store.count(where=where)
        if found:
            self.store.delete(where)
        return found


@lru_cache(maxsize=4)
def get_fragment_index(settings: Settings) -> FragmentIndex:
    """The memory collection of these settings, paired with their embedder; one per configuration."""
    from rag_orchestrator.retrieval.embedders import get_embedder

    embedder = get_embedder(settings)
    store = VectorStore(settings, embedder.name, collection=settings.chroma_memory_collection)
    return FragmentIndex(store, embedder)


def fragment_eraser(settings: Settings) -> Callable[[str], None]:
    """`forget_conversation` with no embedder made: the archival purge embeds nothing (nor reads its key)."""
    return FragmentIndex(
        VectorStore(settings, None, collection=settings.chroma_memory_collection), None
    ).forget_conversation
