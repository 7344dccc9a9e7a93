"""Conversation memory: the caller's own fragments, in a Chroma collection apart from the knowledge base.

A completed turn gives two fragments (source `conversation`, modality `text`): what the user said (kind
`said`) and the answer (kind `answered`). An attachment gives one per segment (source and modality:
`document`, `image-ocr`, `image-caption` or `audio`). Fragments live in CHROMA_MEMORY_COLLECTION and
never in CHROMA_COLLECTION, so `/api/v1/query` and the answer endpoint cannot find one.

Metadata of every fragment: `documentId` and `chunkIndex` (its citation), `title`, `source`, `modality`,
`conversationId`, `callerId`, `createdAt`; a turn's also `kind` and `messageId` (the exchange's answer,
so a regenerate or an edit removes both of the exchange's fragments), a segment's `attachmentId` and
`index`. Ids are deterministic: indexing the same turn or segment again replaces it. A turn's fragment
id (`said-<answerId>`, `answered-<answerId>`) is the one the memory routes take.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from rag_orchestrator.config import Settings
from rag_orchestrator.domain.attachments import citation_document
from rag_orchestrator.domain.memory import MemoryFragment
from rag_orchestrator.domain.modalities import ATTACHMENT_MODALITIES, TEXT
from rag_orchestrator.domain.passages import CITATION, Passage
from rag_orchestrator.retrieval.chroma_http import QueryRow
from rag_orchestrator.retrieval.chunking import Chunk
from rag_orchestrator.retrieval.vector_store import VectorStore
from rag_orchestrator.sanitize import MAX_TITLE, sanitize_metadata, truncate

if TYPE_CHECKING:
    from rag_orchestrator.retrieval.embedders import Embedder

CONVERSATION = "conversation"
SAID, ANSWERED = "said", "answered"
KINDS = (SAID, ANSWERED)
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
    kind: str | None = None  # a turn's: `said` or `answered`

    @property
    def id(self) -> str:
        # A turn's ids hold its answer's message id, so two turns in one millisecond stay apart.
        if self.kind:
            return f"{self.kind}-{self.message_id}"
        return f"{self.document_id}#{self.index}"

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
        if self.kind:
            metadata["kind"] = self.kind
        if self.attachment_id:
            metadata |= {"attachmentId": self.attachment_id, "index": self.index}
        return Chunk(self.id, self.text, metadata)


def memory_label(kind: str, created_at: datetime) -> str:
    """How a turn's fragment is introduced to the model: its kind and its date."""
    day = f"{created_at.astimezone(UTC):%Y-%m-%d}"
    if kind == SAID:
        return f"You said on {day}"
    return f"An earlier answer of {day}, may be outdated"


def conversation_fragments(
    *,
    conversation_id: str,
    caller_id: str,
    message_id: str,
    question: str,
    answer: str,
    created_at: datetime,
) -> list[Fragment]:
    """A completed turn: what the user said and the answer (`message_id`, `created_at`), citations removed.

    Their chunkIndex is the answer's time in milliseconds times two (+1 for the answer): unique in the
    conversation, and stable."""
    question, answer = question.strip(), _CITATION.sub("", answer).strip()
    base = int(created_at.timestamp() * 1000) * 2
    texts = {SAID: truncate(question, MAX_QUESTION_CHARS), ANSWERED: truncate(answer, MAX_ANSWER_CHARS)}
    return [
        Fragment(
            caller_id=caller_id,
            conversation_id=conversation_id,
            document_id=f"{CONVERSATION}:{conversation_id}",
            index=base + offset,
            source=CONVERSATION,
            modality=TEXT,
            title=memory_label(kind, created_at),
            text=text,
            created_at=created_at,
            message_id=message_id,
            kind=kind,
        )
        for offset, (kind, text) in enumerate(texts.items())
        if text
    ]


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


def remembered_fragment(row: QueryRow) -> MemoryFragment:
    """A turn fragment as its caller lists it (the memory routes)."""
    meta = row.metadata
    return MemoryFragment(
        fragment_id=row.id,
        kind=meta.get("kind"),
        text=row.document or "",
        conversation_id=str(meta.get("conversationId") or ""),
        created_at=datetime.fromisoformat(str(meta.get("createdAt")).replace("Z", "+00:00")),
    )


class FragmentIndex:
    """CHROMA_MEMORY_COLLECTION: add fragments; recall, list and forget one caller's; forget a
    conversation's. Blocking calls.

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

    def recall(
        self,
        vector: Sequence[float],
        caller_id: str,
        top_k: int,
        *,
        outside: str | None = None,
        filters: Mapping[str, Any] | None = None,
    ) -> list[Passage]:
        """The caller's `top_k` nearest turn fragments, best first, none of conversation `outside`."""
        scope: dict[str, Any] = {"kind": {"$in": list(KINDS)}}
        if outside:
            scope = {"$and": [scope, {"conversationId": {"$ne": outside}}]}
        return self.store.query(vector, top_k, caller_id=caller_id, scope=scope, **(filters or {}))

    def segments(
        self, vector: Sequence[float], caller_id: str, top_k: int, filters: Mapping[str, Any] | None = None
    ) -> list[Passage]:
        """The caller's `top_k` nearest attachment segments, best first."""
        scope = {"source": {"$in": list(ATTACHMENT_MODALITIES)}}
        return self.store.query(vector, top_k, caller_id=caller_id, scope=scope, **(filters or {}))

    def remembered(
        self, caller_id: str, near: Sequence[float] | None = None, top_k: int = 0
    ) -> list[MemoryFragment]:
        """The caller's turn fragments: newest first, or the `top_k` nearest to `near`, best first."""
        where = {"$and": [{"callerId": caller_id}, {"kind": {"$in": list(KINDS)}}]}
        if near is not None:
            return [remembered_fragment(row) for row in self.store.nearest(near, top_k, where)]
        found = [remembered_fragment(row) for row in self.store.entries(where)]
        # A turn's answer came after what was said in it: newer, so listed first.
        return sorted(found, key=lambda r: (r.created_at, r.kind == ANSWERED, r.fragment_id), reverse=True)

    def forget(self, caller_id: str, fragment_id: str) -> bool:
        """Delete one of the caller's turn fragments; False when the caller has none of that id."""
        where = {"$and": [{"callerId": caller_id}, {"kind": {"$in": list(KINDS)}}]}
        if not self.store.entries_of([fragment_id], where):
            return False
        self.store.delete_ids([fragment_id])
        return True

    def forget_caller(self, caller_id: str) -> None:
        """Delete every turn fragment of the caller (attachments' segments go with their conversations)."""
        self.store.delete({"$and": [{"callerId": caller_id}, {"kind": {"$in": list(KINDS)}}]})

    def forget_messages(self, message_ids: Sequence[str]) -> None:
        """Delete the fragments of these answers' exchanges (earlier versions, once superseded)."""
        if message_ids:
            self.store.delete({"messageId": {"$in": list(message_ids)}})

    def forget_conversation(self, conversation_id: str) -> None:
        """Delete every fragment of the conversation: its turns and its attachments' segments."""
        self.store.delete({"conversationId": conversation_id})

    def of_caller(self, caller_id: str) -> list[dict[str, object]]:
        """Every fragment of the caller, turns' (both kinds) and segments', `{id, text, metadata}` (an export)."""
        rows = self.store.entries({"callerId": caller_id})
        return [{"id": row.id, "text": row.document or "", "metadata": row.metadata} for row in rows]

    def erase_caller(self, caller_id: str) -> int:
        """Delete every fragment of the caller, turns' and segments' (an erasure); how many there were."""
        where = {"callerId": caller_id}
        found = self.store.count(where=where)
        if found:
            self.store.delete(where)
        return found


def create_fragment_index(settings: Settings, embedder: Embedder) -> FragmentIndex:
    """CHROMA_MEMORY_COLLECTION with the embedder that fills and searches it."""
    store = VectorStore(settings, embedder.name, collection=settings.chroma_memory_collection)
    return FragmentIndex(store, embedder)


def unembedded_memory(settings: Settings) -> FragmentIndex:
    """Conversation memory with no embedder made, for work that embeds nothing (nor reads the
    embedder's key): purging, erasing and exporting, also with MEMORY_ENABLED=false."""
    return FragmentIndex(VectorStore(settings, None, collection=settings.chroma_memory_collection), None)


def fragment_eraser(settings: Settings) -> Callable[[str], None]:
    """`forget_conversation` for the archival purge."""
    return unembedded_memory(settings).forget_conversation
