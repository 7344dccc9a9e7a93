"""A Chroma collection over Chroma's REST API (`chroma_http`): no chromadb in the layer.

Two collections use it: the knowledge base (CHROMA_COLLECTION) and conversation memory
(CHROMA_MEMORY_COLLECTION, `fragments.py`). A search reads the collection by name once (cached, read again
once if a query finds it gone) and never creates it: a missing collection holds no passages. Neither a delete
nor a count creates it either. The first upsert creates it, in the cosine space and with the embedder's name
in its metadata; a write that finds it deleted behind our back creates it again, once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import httpx

from rag_orchestrator.config import Settings
from rag_orchestrator.domain.modalities import ModalityFilter
from rag_orchestrator.domain.passages import Passage
from rag_orchestrator.errors import ConfigError, VectorStoreUnavailable
from rag_orchestrator.retrieval.chroma_http import (
    ChromaClient,
    ChromaNotFound,
    CollectionInfo,
    QueryRow,
)
from rag_orchestrator.retrieval.chunking import Chunk

T = TypeVar("T")
UPSERT_BATCH = 256
# When each batch of chunks was sent to Chroma, in epoch milliseconds: a number, so a reader can ask for
# the chunks written since it last looked (`lexical.py`); `ingestedAt` is a string, which `$gte` cannot compare.
WRITTEN_AT = "writtenAt"


def epoch_ms() -> int:
    return time.time_ns() // 1_000_000


def build_where(
    *,
    caller_id: str | None = None,
    source: str | None = None,
    tags: Sequence[str] | None = None,
    modality: ModalityFilter | None = None,
    scope: dict[str, Any] | None = None,
) -> dict[str, Any] | None:
    """Chroma `where` filter: caller and source must match, the modality be one of those given; any one
    of the tags is enough; `scope` must hold too (conversation memory's own clauses)."""
    clauses: list[dict[str, Any]] = [scope] if scope else []
    if caller_id is not None:
        clauses.append({"callerId": caller_id})
    if source:
        clauses.append({"source": source})
    modalities = list(dict.fromkeys([modality] if isinstance(modality, str) else modality or ()))
    if len(modalities) == 1:
        clauses.append({"modality": modalities[0]})
    elif modalities:
        clauses.append({"modality": {"$in": modalities}})
    wanted = list(dict.fromkeys(t for t in tags or () if t))
    if len(wanted) == 1:
        clauses.append({"tags": {"$contains": wanted[0]}})
    elif wanted:
        clauses.append({"$or": [{"tags": {"$contains": tag}} for tag in wanted]})
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


class VectorStore:
    """One Chroma collection (cosine space), created on first write, holding vectors of one embedder only.

    Without an embedder's name the store only deletes: it neither checks nor records whose vectors it holds.
    """

    def __init__(
        self,
        settings: Settings,
        embedder_name: str | None,
        *,
        collection: str | None = None,
        transport: httpx.BaseTransport | None = None,
        stamp_writes: bool = False,
    ) -> None:
        self.settings = settings
        self.stamp_writes = stamp_writes  # each chunk upserted gets WRITTEN_AT
        self.embedder_name = embedder_name
        self.collection = collection or settings.chroma_collection
        self._transport = transport
        self._client: ChromaClient | None = None
        self._read_collection: CollectionInfo | None = None  # found by name (searches)
        self._write_collection: CollectionInfo | None = None  # got or created by name (writes)
        self._read_lock = threading.Lock()
        self._write_lock = threading.Lock()  # apart, so a search never waits on a write's longer timeout
        self.generation = 0  # counts this process's writes: what reads it kept (the lexical index) is older

    def upsert(self, chunks: Sequence[Chunk], embeddings: Sequence[Sequence[float]]) -> None:
        if len(chunks) != len(embeddings):
            raise ValueError("one embedding per chunk")
        for start in range(0, len(chunks), UPSERT_BATCH):
            part = chunks[start : start + UPSERT_BATCH]
            vectors = embeddings[start : start + len(part)]

            def put(
                client: ChromaClient,
                collection_id: str,
                part: Sequence[Chunk] = part,
                vectors: Sequence[Sequence[float]] = vectors,
            ) -> None:
                texts, metadatas = [c.text for c in part], [c.metadata for c in part]
                if self.stamp_writes:
                    written = {WRITTEN_AT: epoch_ms()}
                    metadatas = [{**metadata, **written} for metadata in metadatas]
                client.upsert(collection_id, [c.id for c in part], vectors, texts, metadatas)

            self._write(put)
            self.generation += 1

    def delete_document(self, document_id: str, *, keep_first: int = 0) -> None:
        """Delete the document's chunks, or only those from chunkIndex `keep_first` on (a re-ingested tail)."""
        where: dict[str, Any] = {"documentId": document_id}
        if keep_first:
            where = {"$and": [where, {"chunkIndex": {"$gte": keep_first}}]}
        self.delete(where)

    def delete_ids(self, ids: Sequence[str]) -> None:
        """Delete these entries; a collection that does not exist holds nothing and is not created."""
        if ids and self._resolve()[1] is not None:
            self._write(lambda client, collection_id: client.delete(collection_id, ids=list(ids)))
            self.generation += 1

    def delete(self, where: dict[str, Any]) -> None:
        """Delete what matches `where`; a collection that does not exist holds nothing and is not created."""
        if self._resolve()[1] is None:
            return
        self._write(lambda client, collection_id: client.delete(collection_id, where=where))
        self.generation += 1

    def query(
        self,
        embedding: Sequence[float],
        top_k: int,
        *,
        caller_id: str | None = None,
        source: str | None = None,
        tags: Sequence[str] | None = None,
        modality: ModalityFilter | None = None,
        scope: dict[str, Any] | None = None,
    ) -> list[Passage]:
        """The `top_k` nearest chunks, best first, with score = 1 - cosine distance; none if no collection yet."""
        if top_k < 1:
            raise ValueError(f"top_k must be at least 1, got {top_k}")
        where = build_where(caller_id=caller_id, source=source, tags=tags, modality=modality, scope=scope)
        return [passage_of(row) for row in self.nearest(embedding, top_k, where)]

    def nearest(self, embedding: Sequence[float], top_k: int, where: dict[str, Any] | None) -> list[QueryRow]:
        """The `top_k` nearest entries matching `where`, best first, as Chroma returns them."""
        none: list[QueryRow] = []
        return self.read(
            lambda client, collection_id: client.query(collection_id, embedding, top_k, where), none
        )

    def entries(self, where: dict[str, Any]) -> list[QueryRow]:
        """Every entry matching `where`, with its text and metadata, in no particular order."""
        return self.entries_of(None, where)

    def entries_of(self, ids: Sequence[str] | None, where: dict[str, Any]) -> list[QueryRow]:
        """The entries matching `where` (among `ids`, if given), with their text and metadata."""
        none: list[QueryRow] = []
        include = ["documents", "metadatas"]
        return self.read(
            lambda client, collection_id: client.get(collection_id, ids=ids, where=where, include=include),
            none,
        )

    def count(self, document_id: str | None = None, *, where: dict[str, Any] | None = None) -> int:
        """Entries in the collection, of one document, or matching `where`; none if there is no collection."""
        if document_id is not None:
            where = {"documentId": document_id}
        if where is None:
            return self.read(lambda client, collection_id: client.count(collection_id), 0)
        none: list[QueryRow] = []
        return len(self.read(lambda client, collection_id: client.get(collection_id, where=where), none))

    # ----------------------------------------------------------------- reads
    def read(self, operation: Callable[[ChromaClient, str], T], absent: T) -> T:
        """`operation(client, collection_id)` over Chroma's REST API; `absent` when there is no collection."""
        try:
            return self._read_once(operation, absent)
        except ChromaNotFound:
            # Deleted, maybe recreated, behind our back: read the collection by name again, once.
            with self._read_lock:
                self._read_collection = None
            try:
                return self._read_once(operation, absent)
            except ChromaNotFound:
                return absent

    def _read_once(self, operation: Callable[[ChromaClient, str], T], absent: T) -> T:
        client, collection = self._resolve()
        return absent if collection is None else operation(client, collection.id)

    def _resolve(self) -> tuple[ChromaClient, CollectionInfo | None]:
        """The client and the collection read by name, cached once found; absence is not cached."""
        with self._read_lock:
            client = self._connect()
            if self._read_collection is None:
                found = client.find_collection(self.collection)
                if found is not None:
                    self._check_embedder(found.metadata)
                self._read_collection = found
            return client, self._read_collection

    def _connect(self) -> ChromaClient:
        # Under the read lock; lazily, so start-up builds no HTTP client (its TLS context alone costs ms).
        if self._client is None:
            self._client = ChromaClient(
                self.settings.chroma_url,
                tenant=self.settings.chroma_tenant,
                database=self.settings.chroma_database,
                token=self.settings.secret("chroma_token"),
                timeout_seconds=self.settings.chroma_timeout_seconds,
                transport=self._transport,
            )
        return self._client

    # ----------------------------------------------------------------- writes
    def _write(self, operation: Callable[[ChromaClient, str], None]) -> None:
        """`operation(client, collection_id)` on the collection, got or created by name; created again once
        if it was deleted behind our back."""
        try:
            operation(*self._open())
        except ChromaNotFound:
            with self._write_lock:
                self._write_collection = None
            try:
                operation(*self._open())
            except ChromaNotFound:
                raise VectorStoreUnavailable("Chroma refused the request (HTTP 404)") from None

    def _open(self) -> tuple[ChromaClient, str]:
        with self._read_lock:
            client = self._connect()
        with self._write_lock:
            if self._write_collection is None:
                metadata = {"embedder": self.embedder_name} if self.embedder_name else None
                collection = client.get_or_create_collection(self.collection, metadata)
                self._check_embedder(collection.metadata)
                self._write_collection = collection
            return client, self._write_collection.id

    def _check_embedder(self, metadata: dict[str, Any]) -> None:
        stored = metadata.get("embedder")
        if stored and self.embedder_name and stored != self.embedder_name:
            raise ConfigError(
                f"Chroma collection {self.collection!r} holds vectors of {stored}, "
                f"but the embedder is {self.embedder_name}: use another collection or re-ingest"
            )


def passage_of(row: QueryRow, score: float | None = None) -> Passage:
    """A row as a passage; its score is 1 - cosine distance unless given."""
    meta = row.metadata
    tags = meta.get("tags")
    return Passage(
        document_id=str(meta.get("documentId") or row.id.rpartition("#")[0]),
        title=str(meta.get("title") or ""),
        chunk_index=int(meta.get("chunkIndex") or 0),
        score=1.0 - row.distance if score is None else score,
        source=meta.get("source") or None,
        tags=[str(t) for t in tags] if isinstance(tags, list) else [],
        text=row.document or "",
        kind=meta.get("kind") or None,
    )
