"""Chroma's v2 REST API: the requests chromadb-client 1.5.9 sends, without chromadb.

Importing chromadb costs 0.7 s of CPU (numpy, the OpenTelemetry SDK, its gRPC exporter), more than a cold
chat-stream Lambda spends before its first token, so the layer speaks the wire protocol itself. Reads: a
collection by name (its id and metadata), a query by id (nearest neighbours), entries by ids or filters (the
lexical search's term lookups, `lexical`), a count. Writes (bodies in `chroma_writes`): get or create a
collection by name, upsert, delete by ids or filter; they wait up to WRITE_TIMEOUT, not a search's timeout.
Requests travel on pooled keep-alive connections of the standard library (`http_pool`).

Errors come back as `{"error": "<ChromaError class name>", "message": ...}`; a missing collection is
`NotFoundError` (HTTP 404), whether its name, its id or its database is missing.

    timeout (CHROMA_TIMEOUT_SECONDS;
      a write's WRITE_TIMEOUT)       -> VectorStoreUnavailable("Chroma did not answer within N s")
    no connection, or a broken one    -> VectorStoreUnavailable("Chroma could not be reached")
    NotFoundError                    -> ChromaNotFound (the caller decides: a search finds nothing, a write
                                        creates the collection again once; on get-or-create: no database)
    any other non-2xx answer         -> VectorStoreUnavailable("Chroma refused the request (HTTP n)"); Chroma's
                                        own error and message go to the log only
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlparse

import httpx

from rag_orchestrator.errors import VectorStoreUnavailable
from rag_orchestrator.http_pool import Request, Timeout, WireTimeout, WireUnreachable, wire_for
from rag_orchestrator.observability import logger, redacted
from rag_orchestrator.retrieval.chroma_query import JSON, query_content
from rag_orchestrator.retrieval.chroma_writes import create_body, delete_body, upsert_body

DEFAULT_TIMEOUT_SECONDS = 3.0
# Writes (ingestion, memory indexing after a turn) may take longer than a search; no turn waits on them.
WRITE_TIMEOUT = Timeout(connect=3.0, read=30.0)
USER_AGENT = "rag-orchestrator (Chroma v2 REST; chromadb-client 1.5.9 protocol)"


class ChromaNotFound(Exception):
    """Chroma answered NotFoundError: the collection (by name or id), or its database, does not exist."""


@dataclass(frozen=True, slots=True)
class CollectionInfo:
    id: str
    name: str
    metadata: dict[str, Any]


@dataclass(frozen=True, slots=True)
class QueryRow:
    id: str
    document: str | None
    metadata: dict[str, Any]
    distance: float


def api_url(chroma_url: str) -> httpx.URL:
    """CHROMA_URL's scheme, host and port with chromadb-client's API path; like the client, any path is ignored."""
    url = urlparse(chroma_url)
    ssl = url.scheme == "https"
    return httpx.URL(
        scheme="https" if ssl else "http",
        host=url.hostname or "127.0.0.1",
        port=url.port or (443 if ssl else 80),
        path="/api/v2",
    )


def get_body(
    *,
    ids: Sequence[str] | None = None,
    where: dict[str, Any] | None = None,
    where_document: dict[str, Any] | None = None,
    limit: int | None = None,
    offset: int | None = None,
    include: Sequence[str] = (),
) -> dict[str, Any]:
    """The JSON body of `POST .../collections/{id}/get`, as chromadb-client builds it."""
    return {
        "ids": list(ids) if ids is not None else None,
        "where": where,
        "where_document": where_document,
        "limit": limit,
        "offset": offset,
        "include": list(include),
    }


def parse_collection(body: dict[str, Any]) -> CollectionInfo:
    return CollectionInfo(id=str(body["id"]), name=str(body["name"]), metadata=body.get("metadata") or {})


def parse_query(body: dict[str, Any]) -> list[QueryRow]:
    """The rows of the first (only) query embedding, best first."""
    rows = zip(body["ids"][0], body["documents"][0], body["metadatas"][0], body["distances"][0], strict=True)
    return [
        QueryRow(i, document, metadata or {}, float(distance)) for i, document, metadata, distance in rows
    ]


def parse_get(body: dict[str, Any]) -> list[QueryRow]:
    """The entries a get returned, in Chroma's order, with no distance (0.0)."""
    ids = body["ids"]
    documents = body.get("documents") or [None] * len(ids)
    metadatas = body.get("metadatas") or [None] * len(ids)
    return [
        QueryRow(i, document, metadata or {}, 0.0)
        for i, document, metadata in zip(ids, documents, metadatas, strict=True)
    ]


class ChromaClient:
    """Reads and writes one tenant and database of a Chroma server over one pool of connections (through
    httpx instead with a `transport`, or a proxy from the environment)."""

    def __init__(
        self,
        chroma_url: str,
        *,
        tenant: str,
        database: str,
        token: str | None,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT}
        if token:
            headers["x-chroma-token"] = token
        # Every phase (connect, each read) is bounded: a paused server costs a search this long.
        self._timeout = Timeout(connect=min(timeout_seconds, 3.0), read=timeout_seconds)
        base_url = api_url(chroma_url)
        self._wire = wire_for(str(base_url), base_url.path, headers, transport)
        self.timeout_seconds = timeout_seconds
        self.tenant = tenant
        self.database = database
        self._database_path = f"/tenants/{tenant}/databases/{database}"

    def get_collection(self, name: str) -> CollectionInfo:
        return parse_collection(self._request("GET", f"{self._database_path}/collections/{name}"))

    def find_collection(self, name: str) -> CollectionInfo | None:
        """The collection, or None when it does not exist; a missing tenant or database is an error."""
        try:
            return self.get_collection(name)
        except ChromaNotFound:
            pass
        # Chroma says "collection does not exist" for a missing database too: tell the two apart.
        try:
            self._request("GET", self._database_path)
        except ChromaNotFound:
            raise self._no_database() from None
        return None

    def get_or_create_collection(self, name: str, metadata: dict[str, Any] | None) -> CollectionInfo:
        """The collection by name, created in the cosine space with `metadata` if missing (metadata then unused)."""
        path = f"{self._database_path}/collections"
        try:
            body = self._request("POST", path, create_body(name, metadata), timeout=WRITE_TIMEOUT)
        except ChromaNotFound:
            raise self._no_database() from None
        return parse_collection(body)

    def query(
        self, collection_id: str, embedding: Sequence[float], n_results: int, where: dict[str, Any] | None
    ) -> list[QueryRow]:
        path = f"{self._database_path}/collections/{collection_id}/query"
        return parse_query(self._request("POST", path, content=query_content(embedding, n_results, where)))

    def get(self, collection_id: str, **body: Any) -> list[QueryRow]:
        """Entries by ids or filters (`get_body`'s keywords); only ids unless `include` names more."""
        path = f"{self._database_path}/collections/{collection_id}/get"
        return parse_get(self._request("POST", path, get_body(**body)))

    def count(self, collection_id: str) -> int:
        path = f"{self._database_path}/collections/{collection_id}/count"
        return int(self._request("GET", path, allow_number=True))

    def upsert(
        self,
        collection_id: str,
        ids: Sequence[str],
        embeddings: Sequence[Sequence[float]],
        documents: Sequence[str],
        metadatas: Sequence[Mapping[str, Any]],
    ) -> None:
        path = f"{self._database_path}/collections/{collection_id}/upsert"
        self._request("POST", path, upsert_body(ids, embeddings, documents, metadatas), timeout=WRITE_TIMEOUT)

    def delete(
        self, collection_id: str, *, ids: Sequence[str] | None = None, where: dict[str, Any] | None = None
    ) -> None:
        path = f"{self._database_path}/collections/{collection_id}/delete"
        self._request("POST", path, delete_body(ids, where), timeout=WRITE_TIMEOUT)

    def close(self) -> None:
        self._wire.close()

    def _no_database(self) -> VectorStoreUnavailable:
        logger.error(
            "chroma database not found",
            extra={"chroma_tenant": self.tenant, "chroma_database": self.database},
        )
        return VectorStoreUnavailable(
            "Chroma refused the request (its tenant or database does not exist)", retryable=False
        )

    def _request(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        *,
        content: bytes | None = None,
        allow_number: bool = False,
        timeout: Timeout | None = None,
    ) -> Any:
        if body is not None:
            content = JSON.encode(body).encode()
        limits = timeout or self._timeout
        # Like chromadb-client: escape the path ourselves.
        try:
            answer = self._wire.send(Request(method, quote(path, safe="/"), content, limits))
        except WireTimeout as exc:
            logger.warning("chroma timed out", extra={"error_type": str(exc)})
            raise VectorStoreUnavailable(f"Chroma did not answer within {limits.read:g} s") from None
        except WireUnreachable as exc:
            logger.warning("chroma unreachable", extra={"error_type": str(exc)})
            raise VectorStoreUnavailable("Chroma could not be reached") from None
        status, raw = answer.status, answer.body
        try:
            found = json.loads(raw)
        except ValueError:
            found = None
        if 200 <= status < 300 and (isinstance(found, dict) or (allow_number and isinstance(found, int))):
            return found
        error = found.get("error") if isinstance(found, dict) else None
        if error == "NotFoundError":
            raise ChromaNotFound(str(found.get("message", "")))
        error_type = str(error) if error else f"HTTP {status}"
        detail = found.get("message") if isinstance(found, dict) else raw.decode("utf-8", "replace")
        logger.error(
            "chroma refused a request",
            extra={"error_type": error_type, "status": status, "detail": redacted(str(detail))},
        )
        raise VectorStoreUnavailable(f"Chroma refused the request (HTTP {status})", retryable=status >= 500)
