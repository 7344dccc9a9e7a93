"""The search path's Chroma REST dialect against a scripted transport: requests, answers, errors, re-reads."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest

from rag_orchestrator.config import load_settings
from rag_orchestrator.domain.passages import Passage
from rag_orchestrator.errors import VectorStoreUnavailable
from rag_orchestrator.retrieval.chroma_http import ChromaClient, ChromaNotFound, api_url
from rag_orchestrator.retrieval.chunking import Chunk
from rag_orchestrator.retrieval.vector_store import VectorStore

BASE = "/api/v2/tenants/acme/databases/kb/collections"
EMBEDDER = "hashing-v2/4"


def collection(collection_id: str, embedder: str = EMBEDDER) -> httpx.Response:
    body = {"id": collection_id, "name": "knowledge-base", "metadata": {"embedder": embedder}, "dimension": 4}
    return httpx.Response(200, json=body)


def rows(*rows: tuple[str, str | None, dict | None, float]) -> httpx.Response:
    ids, documents, metadatas, distances = (
        (list(column) for column in zip(*rows, strict=True)) if rows else ([],) * 4
    )
    body = {"ids": [ids], "documents": [documents], "metadatas": [metadatas], "distances": [distances]}
    return httpx.Response(200, json={**body, "embeddings": None, "uris": None, "include": []})


def not_found(what: str) -> httpx.Response:
    return httpx.Response(
        404, json={"error": "NotFoundError", "message": f"Collection [{what}] does not exist"}
    )


class Script(httpx.MockTransport):
    """Answers requests in order from a list; keeps the requests."""

    def __init__(self, *answers: httpx.Response | Callable[[httpx.Request], httpx.Response]) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []
        super().__init__(self._answer)

    def _answer(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0)
        return answer(request) if callable(answer) else answer

    @property
    def calls(self) -> list[str]:
        return [f"{r.method} {r.url.path.removeprefix(BASE)}" for r in self.requests]


def store(script: Script, **settings: object) -> VectorStore:
    config = load_settings(chroma_tenant="acme", chroma_database="kb", **settings)
    return VectorStore(config, EMBEDDER, transport=script)


def test_query_sends_chromadb_clients_body_and_maps_rows_to_passages():
    script = Script(
        collection("c-1"),
        rows(
            (
                "guide#2",
                "Chroma runs apart.",
                {
                    "documentId": "guide",
                    "chunkIndex": 2,
                    "title": "Guide",
                    "source": "wiki",
                    "tags": ["ops", "chroma"],
                },
                0.25,
            ),
            ("loose#0", None, None, 0.5),
        ),
    )
    passages = store(script).query([0.5, 0.5, 0.5, 0.5], 2, source="wiki", tags=["ops"])
    assert script.calls == ["GET /knowledge-base", "POST /c-1/query"]
    assert json.loads(script.requests[1].content) == {
        "ids": None,
        "query_embeddings": [[0.5, 0.5, 0.5, 0.5]],
        "n_results": 2,
        "where": {"$and": [{"source": "wiki"}, {"tags": {"$contains": "ops"}}]},
        "where_document": None,
        "include": ["documents", "metadatas", "distances"],
    }
    assert passages == [
        Passage(document_id="guide", title="Guide", chunk_index=2, score=0.75, source="wiki",
                tags=["ops", "chroma"], text="Chroma runs apart."),
        Passage(document_id="loose", title="", chunk_index=0, score=0.5, source=None, tags=[], text=""),
    ]  # fmt: skip


def test_the_collection_is_read_once_and_again_once_when_a_query_finds_it_gone():
    script = Script(collection("c-1"), rows(), not_found("c-1"), collection("c-2"), rows(), rows())
    vectors = store(script)
    for _ in range(3):
        assert vectors.query([1, 0, 0, 0], 3) == []
    assert script.calls == [
        "GET /knowledge-base",
        "POST /c-1/query",
        "POST /c-1/query",
        "GET /knowledge-base",
        "POST /c-2/query",
        "POST /c-2/query",
    ]


def test_a_collection_gone_for_good_reads_no_passages_and_absence_is_not_cached():
    database = httpx.Response(200, json={"id": "d", "name": "kb", "tenant": "acme"})
    script = Script(
        collection("c-1"), not_found("c-1"), not_found("knowledge-base"), database,
        not_found("knowledge-base"), database,
    )  # fmt: skip
    vectors = store(script)
    assert vectors.query([1, 0, 0, 0], 3) == []
    assert vectors.query([1, 0, 0, 0], 3) == []
    assert script.calls == [
        "GET /knowledge-base",
        "POST /c-1/query",
        "GET /knowledge-base",
        "GET /api/v2/tenants/acme/databases/kb",
        "GET /knowledge-base",
        "GET /api/v2/tenants/acme/databases/kb",
    ]


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (httpx.Response(502, text="<html>bad gateway</html>"), r"refused the request \(HTTP 502\)"),
        (httpx.Response(200, text="not json"), r"refused the request \(HTTP 200\)"),
        (
            httpx.Response(401, json={"error": "AuthError", "message": "no"}),
            r"refused the request \(HTTP 401\)$",
        ),
        (httpx.Response(404, text="no such route"), r"refused the request \(HTTP 404\)"),
    ],
)
def test_refusals_are_unavailable(answer, message):
    with pytest.raises(VectorStoreUnavailable, match=message):
        store(Script(answer)).query([1, 0, 0, 0], 3)


def test_a_timeout_is_unreachable_and_carries_no_chain():
    def hang(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    with pytest.raises(VectorStoreUnavailable, match=r"Chroma did not answer within 3 s") as caught:
        store(Script(hang)).query([1, 0, 0, 0], 3)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_token_tenant_and_database_come_from_settings():
    script = Script(collection("c-1"), rows())
    store(script, chroma_token="t0ken").query([1, 0, 0, 0], 1)
    assert {r.headers["x-chroma-token"] for r in script.requests} == {"t0ken"}
    assert all(r.url.path.startswith(BASE) for r in script.requests)
    script = Script(collection("c-1"), rows())
    store(script).query([1, 0, 0, 0], 1)
    assert not any("x-chroma-token" in r.headers for r in script.requests)


def test_top_k_must_be_positive():
    with pytest.raises(ValueError, match="top_k"):
        store(Script()).query([1, 0, 0, 0], 0)


def test_not_found_is_told_apart_from_other_errors():
    reader = ChromaClient("http://chroma:8000", tenant="acme", database="kb", token=None,
                          transport=Script(not_found("c-9")))  # fmt: skip
    with pytest.raises(ChromaNotFound):
        reader.query("c-9", [1.0], 1, None)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://127.0.0.1:8001", "http://127.0.0.1:8001/api/v2"),
        ("https://chroma.example.com", "https://chroma.example.com/api/v2"),
        ("http://chroma.internal/some/path", "http://chroma.internal/api/v2"),
        ("http://[::1]:8001", "http://[::1]:8001/api/v2"),
    ],
)
def test_api_url_is_chromadb_clients(url, expected):
    assert str(api_url(url)) == expected


def chunk(document_id: str, index: int) -> Chunk:
    return Chunk(f"{document_id}#{index}", f"text {index}", {"documentId": document_id, "chunkIndex": index})


def test_a_write_gets_or_creates_the_collection_once_then_writes_by_id():
    ok = httpx.Response(200, json={})
    script = Script(collection("c-1"), ok, ok)
    vectors = store(script)
    vectors.upsert([chunk("a", 0)], [[1, 0, 0, 0]])
    vectors.upsert([chunk("a", 1)], [[0, 1, 0, 0]])
    assert script.calls == ["POST ", "POST /c-1/upsert", "POST /c-1/upsert"]
    assert json.loads(script.requests[0].content)["metadata"] == {"embedder": EMBEDDER}
    assert vectors.generation == 2


def test_a_write_finding_its_collection_gone_creates_it_again_once():
    ok = httpx.Response(200, json={})
    script = Script(collection("c-1"), not_found("c-1"), collection("c-2"), ok)
    store(script).upsert([chunk("a", 0)], [[1, 0, 0, 0]])
    assert script.calls == ["POST ", "POST /c-1/upsert", "POST ", "POST /c-2/upsert"]

    script = Script(collection("c-1"), not_found("c-1"), collection("c-2"), not_found("c-2"))
    with pytest.raises(VectorStoreUnavailable, match=r"refused the request \(HTTP 404\)"):
        store(script).upsert([chunk("a", 0)], [[1, 0, 0, 0]])


def test_a_write_to_a_missing_database_is_unavailable_for_good():
    script = Script(not_found("kb"))
    with pytest.raises(VectorStoreUnavailable, match="tenant or database does not exist") as caught:
        store(script).upsert([chunk("a", 0)], [[1, 0, 0, 0]])
    assert not caught.value.retryable


def test_a_write_waits_the_write_timeout_and_a_read_the_search_timeout():
    seen: list[dict[str, float | None]] = []

    def hang(request: httpx.Request) -> httpx.Response:
        seen.append(request.extensions["timeout"])
        raise httpx.ReadTimeout("timed out", request=request)

    with pytest.raises(VectorStoreUnavailable, match=r"Chroma did not answer within 30 s") as caught:
        store(Script(hang)).upsert([chunk("a", 0)], [[1, 0, 0, 0]])
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    with pytest.raises(VectorStoreUnavailable, match=r"within 3 s"):
        store(Script(hang)).query([1, 0, 0, 0], 3)
    assert [(t["connect"], t["read"]) for t in seen] == [(3.0, 30.0), (3.0, 3.0)]


def test_deletes_and_counts_of_a_missing_collection_neither_write_nor_create():
    database = httpx.Response(200, json={"id": "d", "name": "kb", "tenant": "acme"})
    script = Script(not_found("knowledge-base"), database, not_found("knowledge-base"), database)
    vectors = store(script)
    vectors.delete_ids(["a#0"])
    assert vectors.count() == 0
    assert all(r.method == "GET" for r in script.requests)
    assert vectors.generation == 0
