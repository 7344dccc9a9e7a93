"""A Chroma collection: writes through chromadb-client, searches through `chroma_http`.

Two collections use it: the knowledge base (CHROMA_COLLECTION) and conversation memory
(CHROMA_MEMORY_COLLECTION, `fragments.py`). The only module that imports chromadb, lazily, and only for
upsert, delete and count: it costs 0.6 to 1.4 s to import, which neither start-up nor a search may pay.
A search reads the collection by name once (cached, read again once if a query finds it gone) and never
creates it: a missing collection holds no passages. A delete never creates it either. The first upsert
creates it, in the cosine space and with the embedder's name in its metadata.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlparse

import httpx

from rag_orchestrator.config import Settings
from rag_orchestrator.domain.modalities import ModalityFilter
from rag_orchestrator.domain.passages import Passage
from rag_orchestrator.errors import ConfigError, VectorStoreUnavailable
from rag_orchestrator.observability import logger, redacted
from rag_orchestrator.retrieval.chroma_http import (
    ChromaNotFound,
    ChromaReader,
    CollectionInfo,
    QueryRow,
)
from rag_orchestrator.retrieval.chunking import Chunk

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection

T = TypeVar("T")
UPSERT_BATCH = 256
# Writes (ingestion) may take longer than a search; they are not on a turn's path.
WRITE_TIMEOUT = httpx.Timeout(30.0, connect=3.0)


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
        client: ClientAPI | None = None,
        *,
        collection: str | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.settings = settings
        self.embedder_name = embedder_name
        self.collection = collection or settings.chroma_collection
        self._client = client
        self._collection: Collection | None = None
        self._transport = transport
        self._reader: ChromaReader | None = None
        self._read_collection: CollectionInfo | None = None
        self._lock = threading.Lock()
        self._read_lock = threading.Lock()  # apart from the write lock, so a search never waits on chromadb
        self.generation = 0  # counts this process's writes: what reads it kept (the lexical index) is older

    def upsert(self, chunks: Sequence[Chunk], embeddings: Sequence[Sequence[float]]) -> None:
        if len(chunks) != len(embeddings):
            raise ValueError("one embedding per chunk")
        for start in range(0, len(chunks), UPSERT_BATCH):
            part = chunks[start : start + UPSERT_BATCH]
            vectors = [list(e) for e in embeddings[start : start + len(part)]]

            def put(
                c: Collection, part: Sequence[Chunk] = part, vectors: list[list[float]] = vectors
            ) -> None:
                c.upsert(
                    ids=[chunk.id for chunk in part],
                    embeddings=vectors,  # type: ignore[arg-type]
                    documents=[chunk.text for chunk in part],
                    metadatas=[chunk.metadata for chunk in part],  # type: ignore[misc]
                )

            self._call(put)
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
            self._call(lambda c: c.delete(ids=list(ids)))
            self.generation += 1

    def delete(self, where: dict[str, Any]) -> None:
        """Delete what matches `where`; a collection that does not exist holds nothing and is not created."""
        if self._resolve()[1] is None:
            return
        self._call(lambda c: c.delete(where=where))
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
            lambda reader, collection_id: reader.query(collection_id, embedding, top_k, where), none
        )

    def entries(self, where: dict[str, Any]) -> list[QueryRow]:
        """Every entry matching `where`, with its text and metadata, in no particular order."""
        return self.entries_of(None, where)

    def entries_of(self, ids: Sequence[str] | None, where: dict[str, Any]) -> list[QueryRow]:
        """The entries matching `where` (among `ids`, if given), with their text and metadata."""
        none: list[QueryRow] = []
        include = ["documents", "metadatas"]
        return self.read(
            lambda reader, collection_id: reader.get(collection_id, ids=ids, where=where, include=include),
            none,
        )

    def count(self, document_id: str | None = None, *, where: dict[str, Any] | None = None) -> int:
        """Entries in the collection, of one document, or matching `where`."""
        if document_id is not None:
            where = {"documentId": document_id}
        if where is None:
            return self._call(lambda c: c.count())
        if self._resolve()[1] is None:  # no collection holds nothing, and counting creates none
            return 0
        return len(self._call(lambda c: c.get(where=where, include=[]))["ids"])

    # ----------------------------------------------------------------- reads (no chromadb)
    def read(self, operation: Callable[[ChromaReader, str], T], absent: T) -> T:
        """`operation(reader, collection_id)` over Chroma's REST API; `absent` when there is no collection."""
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

    def _read_once(self, operation: Callable[[ChromaReader, str], T], absent: T) -> T:
        reader, collection = self._resolve()
        return absent if collection is None else operation(reader, collection.id)

    def _resolve(self) -> tuple[ChromaReader, CollectionInfo | None]:
        """The reader and the collection read by name, cached once found; absence is not cached."""
        with self._read_lock:
            if self._reader is None:
                self._reader = ChromaReader(
                    self.settings.chroma_url,
                    tenant=self.settings.chroma_tenant,
                    database=self.settings.chroma_database,
                    token=self.settings.secret("chroma_token"),
                    timeout_seconds=self.settings.chroma_timeout_seconds,
                    transport=self._transport,
                )
            if self._read_collection is None:
                found = self._reader.find_collection(self.collection)
                if found is not None:
                    self._check_embedder(found.metadata)
                self._read_collection = found
            return self._reader, self._read_collection

    # ----------------------------------------------------------------- writes (chromadb-client)
    def _call(self, operation: Callable[[Collection], T]) -> T:
        import chromadb.errors

        try:
            try:
                return operation(self._open())
            except chromadb.errors.NotFoundError:
                # The collection was deleted behind our back: create it again, once.
                self._collection = None
                return operation(self._open())
        except (httpx.TransportError, ConnectionError) as exc:
            self._collection = None
            logger.warning("chroma unreachable", extra={"error_type": type(exc).__name__})
            raise VectorStoreUnavailable("Chroma could not be reached") from None
        except chromadb.errors.ChromaError as exc:
            logger.error(
                "chroma refused a request",
                extra={"error_type": type(exc).__name__, "detail": redacted(str(exc))},
            )
            raise VectorStoreUnavailable("Chroma refused the request") from None

    def _open(self) -> Collection:
        with self._lock:
            if self._collection is None:
                self._collection = self._get_or_create()
            return self._collection

    def _get_or_create(self) -> Collection:
        if self._client is None:
            self._client = connect(self.settings)
        collection = self._client.get_or_create_collection(
            self.collection,
            configuration={"hnsw": {"space": "cosine"}},
            metadata={"embedder": self.embedder_name} if self.embedder_name else None,
            embedding_function=None,
        )
        self._check_embedder(collection.metadata or {})
        return collection

    def _check_embedder(self, metadata: dict[str, Any]) -> None:
        stored = metadata.get("embedder")
        if stored and self.embedder_name and stored != self.embedder_name:
            raise ConfigError(
                f"Chroma collection {self.collection!r} holds vectors of {stored}, "
                f"but the embedder is {self.embedder_name}: use another collection or re-ingest"
            )


def connect(settings: Settings) -> ClientAPI:
    """An HttpClient for CHROMA_URL, with the token header, tenant and database; no telemetry."""
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    url = urlparse(settings.chroma_url)
    ssl = url.scheme == "https"
    token = settings.secret("chroma_token")
    headers = {"x-chroma-token": token} if token else None
    try:
        client = chromadb.HttpClient(
            host=url.hostname or "127.0.0.1",
            port=url.port or (443 if ssl else 80),
            ssl=ssl,
            headers=headers,
            tenant=settings.chroma_tenant,
            database=settings.chroma_database,
            settings=ChromaSettings(anonymized_telemetry=False),
        )
    except ValueError as exc:  # chromadb's "Could not connect to a Chroma server"
        logger.warning("chroma unreachable", extra={"error_type": type(exc).__name__})
        raise VectorStoreUnavailable("Chroma could not be reached") from None
    except (httpx.TransportError, ConnectionError) as exc:
        logger.warning("chroma unreachable", extra={"error_type": type(exc).__name__})
        raise VectorStoreUnavailable("Chroma could not be reached") from None
    _set_timeout(client)
    return client


def _set_timeout(client: ClientAPI) -> None:
    # chromadb's HTTP session has no timeout at all; a hung server would hold a Lambda until it dies.
    session = getattr(getattr(client, "_server", None), "_session", None)
    if isinstance(session, httpx.Client):
        session.timeout = WRITE_TIMEOUT


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
