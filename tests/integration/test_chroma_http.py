"""The vector store over Chroma's REST API against a real Chroma server, checked against chromadb's own client
(the dev dependency; the layer has no chromadb)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import pytest

from rag_orchestrator.config import Settings, load_settings
from rag_orchestrator.errors import ConfigError, VectorStoreUnavailable
from rag_orchestrator.retrieval.chunking import Chunk
from rag_orchestrator.retrieval.vector_store import VectorStore, build_where
from tests.integration.knowledge import ingest

pytestmark = pytest.mark.integration

LAYER = Path(__file__).resolve().parents[2] / "layers" / "core"
DIMENSIONS = 16
EMBEDDER = "test-embedder/16"
TOKEN = "s3cret-chroma-token"


class Recording(httpx.BaseTransport):
    """The real transport, keeping each request so a test can look at what went over the wire."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []
        self._real = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self._real.handle_request(request)


def connect(settings: Settings):
    """chromadb's own HTTP client on the same server, tenant and database: the reference."""
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    url = httpx.URL(settings.chroma_url)
    token = settings.secret("chroma_token")
    return chromadb.HttpClient(
        host=url.host,
        port=url.port,
        headers={"x-chroma-token": token} if token else None,
        tenant=settings.chroma_tenant,
        database=settings.chroma_database,
        settings=ChromaSettings(anonymized_telemetry=False),
    )


@pytest.fixture
def collection(chroma_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    name = f"http-{uuid.uuid4().hex[:12]}"
    monkeypatch.setenv("CHROMA_COLLECTION", name)
    return name


def vector(rng: random.Random) -> list[float]:
    return [rng.uniform(-1, 1) for _ in range(DIMENSIONS)]


def chunk(document_id: str, index: int, **metadata: object) -> Chunk:
    meta = {"documentId": document_id, "chunkIndex": index, "title": document_id.title(), "modality": "text"}
    return Chunk(f"{document_id}#{index}", f"text {index} of {document_id}", {**meta, **metadata})


CHUNKS = [
    chunk("guide", 0, source="wiki", tags=["ops", "chroma"]),
    chunk("guide", 1, source="wiki", tags=["ops", "chroma"]),
    chunk("bread", 0, source="kitchen", tags=["baking"]),
    chunk("deploy", 0, source="wiki", tags=["deploy", "ops"]),
    chunk("deploy", 1, source="wiki", tags=["deploy", "ops"]),
    chunk("diagram", 0, source="wiki", tags=["ops"], modality="image"),
    chunk("untagged", 0),
]


@pytest.fixture
def written(collection: str) -> VectorStore:
    """CHUNKS written over the REST API, with seeded random embeddings."""
    rng = random.Random(7)
    store = VectorStore(load_settings(), EMBEDDER)
    store.upsert(CHUNKS, [vector(rng) for _ in CHUNKS])
    return store


@pytest.mark.parametrize(
    "filters",
    [
        {},
        {"source": "wiki"},
        {"source": "kitchen"},
        {"tags": ["ops"]},
        {"tags": ["deploy", "baking"]},
        {"tags": ["chroma", "deploy", "nothing"]},
        {"modality": "image"},
        {"modality": "text", "source": "wiki", "tags": ["deploy"]},
        {"source": "nowhere"},
    ],
)
def test_search_reads_what_chromadb_reads(written, filters):
    settings = load_settings()
    query = vector(random.Random(11))
    reader = VectorStore(settings, EMBEDDER)  # a fresh store: nothing cached from the writes
    passages = reader.query(query, 10, **filters)
    expected = (
        connect(settings)
        .get_collection(settings.chroma_collection)
        .query(
            query_embeddings=[query],
            n_results=10,
            where=build_where(**filters),
            include=["documents", "metadatas", "distances"],
        )
    )
    columns = ("ids", "documents", "metadatas", "distances")
    rows = list(zip(*(expected[column][0] for column in columns), strict=True))
    assert [f"{p.document_id}#{p.chunk_index}" for p in passages] == [row[0] for row in rows]
    for passage, (_, text, meta, distance) in zip(passages, rows, strict=True):
        assert passage.text == text
        assert (passage.document_id, passage.chunk_index, passage.title) == (
            meta["documentId"],
            meta["chunkIndex"],
            meta["title"],
        )
        assert passage.source == meta.get("source")
        assert passage.tags == meta.get("tags", [])
        # The query vector goes as float32 text, chromadb's as Python's floats: Chroma reads both as the
        # same float32 values, so the distances are the same to the last bit.
        assert passage.score == 1.0 - distance


def test_filters_pick_the_right_chunks(written):
    def find(**filters) -> set[str]:
        passages = VectorStore(load_settings(), EMBEDDER).query(vector(random.Random(3)), 10, **filters)
        return {f"{p.document_id}#{p.chunk_index}" for p in passages}

    assert find(source="kitchen") == {"bread#0"}
    assert find(tags=["baking"]) == {"bread#0"}
    assert find(tags=["deploy", "baking"]) == {"deploy#0", "deploy#1", "bread#0"}
    assert find(modality="image") == {"diagram#0"}
    assert find(source="wiki", tags=["chroma"]) == {"guide#0", "guide#1"}
    assert len(find()) == len(CHUNKS)


def with_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHROMA_TOKEN", TOKEN)


def test_the_token_header_goes_with_every_request(written, monkeypatch):
    with_token(monkeypatch)
    settings = load_settings()
    wire = Recording()
    store = VectorStore(settings, EMBEDDER, transport=wire)
    assert store.query(vector(random.Random(1)), 3)
    assert store.query(vector(random.Random(2)), 3)
    base = f"/api/v2/tenants/{settings.chroma_tenant}/databases/{settings.chroma_database}/collections"
    paths = [(r.method, r.url.path) for r in wire.requests]
    collection_id = paths[1][1].split("/")[-2]
    # The collection is read by name once; each search is then one request.
    assert paths == [
        ("GET", f"{base}/{settings.chroma_collection}"),
        ("POST", f"{base}/{collection_id}/query"),
        ("POST", f"{base}/{collection_id}/query"),
    ]
    assert {r.headers.get("x-chroma-token") for r in wire.requests} == {TOKEN}


def test_unreachable_server_is_unavailable_without_the_token(monkeypatch, caplog):
    monkeypatch.setenv("CHROMA_URL", "http://127.0.0.1:9")
    with_token(monkeypatch)
    with pytest.raises(VectorStoreUnavailable, match=r"Chroma could not be reached") as caught:
        VectorStore(load_settings(), EMBEDDER).query([0.1] * DIMENSIONS, 3)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    assert TOKEN not in caught.value.message and TOKEN not in caplog.text


def test_a_refused_query_is_unavailable_and_logged_without_the_token(written, monkeypatch, caplog):
    with_token(monkeypatch)
    with pytest.raises(VectorStoreUnavailable, match=r"refused the request \(HTTP 400\)$") as caught:
        VectorStore(load_settings(), EMBEDDER).query([0.1] * (DIMENSIONS + 1), 3)  # wrong dimension
    assert not caught.value.retryable  # the same query would be refused again
    refused = [r for r in caplog.records if r.getMessage() == "chroma refused a request"]
    assert [r.__dict__["error_type"] for r in refused] == ["InvalidArgumentError"]  # Chroma's words: logged
    assert TOKEN not in caplog.text


def test_a_missing_collection_reads_no_passages_and_is_not_created(collection):
    settings = load_settings()
    assert VectorStore(settings, EMBEDDER).query([0.1] * DIMENSIONS, 3) == []
    names = {c.name for c in connect(settings).list_collections()}
    assert collection not in names


def test_a_missing_database_is_unavailable(collection, monkeypatch):
    monkeypatch.setenv("CHROMA_DATABASE", "no_such_database")
    with pytest.raises(VectorStoreUnavailable, match="refused the request"):
        VectorStore(load_settings(), EMBEDDER).query([0.1] * DIMENSIONS, 3)


def test_a_collection_of_another_embedder_is_refused_on_search(written):
    with pytest.raises(ConfigError, match=f"holds vectors of {EMBEDDER}"):
        VectorStore(load_settings(), "other-embedder/16").query([0.1] * DIMENSIONS, 3)


def test_a_collection_recreated_behind_the_stores_back_is_found_again(written):
    settings = load_settings()
    store = VectorStore(settings, EMBEDDER)
    probe = vector(random.Random(5))
    assert len(store.query(probe, 10)) == len(CHUNKS)  # the collection's id is now cached

    connect(settings).delete_collection(settings.chroma_collection)
    assert store.query(probe, 10) == []

    replacement = chunk("fresh", 0, source="new")
    VectorStore(settings, EMBEDDER).upsert([replacement], [probe])
    [found] = store.query(probe, 10)
    assert (found.document_id, found.source, found.score) == ("fresh", "new", pytest.approx(1.0, abs=1e-6))


def test_writes_are_what_chromadb_reads(written):
    rng = random.Random(7)
    embeddings = [vector(rng) for _ in CHUNKS]
    settings = load_settings()
    theirs = connect(settings).get_collection(settings.chroma_collection)
    got = theirs.get(include=["documents", "metadatas", "embeddings"])
    assert sorted(got["ids"]) == sorted(c.id for c in CHUNKS)
    for i, document, metadata, embedding in zip(
        got["ids"], got["documents"], got["metadatas"], got["embeddings"], strict=True
    ):
        index = [c.id for c in CHUNKS].index(i)
        assert (document, metadata) == (CHUNKS[index].text, CHUNKS[index].metadata)
        assert list(embedding) == pytest.approx(embeddings[index], abs=1e-6)  # float32 on the wire
    assert theirs.metadata == {"embedder": EMBEDDER}
    assert theirs.configuration_json["hnsw"]["space"] == "cosine"
    assert written.count() == theirs.count() == len(CHUNKS)
    assert written.count("guide") == 2


def test_a_re_upsert_overwrites_and_deletes_go_by_ids_and_by_filter(written):
    probe = vector(random.Random(21))
    changed = chunk("bread", 0, source="bakery", tags=["baking"])
    written.upsert([changed], [probe])
    [best] = written.query(probe, 1)
    assert (best.document_id, best.source, best.score) == ("bread", "bakery", pytest.approx(1.0, abs=1e-6))
    assert written.count() == len(CHUNKS)

    written.delete_ids(["guide#0", "no-such#0"])
    assert written.count("guide") == 1
    written.delete_document("deploy", keep_first=1)
    assert [e.id for e in written.entries({"documentId": "deploy"})] == ["deploy#0"]
    written.delete({"source": "wiki"})
    assert sorted(e.id for e in written.entries_of(None, {"chunkIndex": 0})) == ["bread#0", "untagged#0"]
    assert written.count() == 2
    assert written.generation == 5  # the fixture's upsert, the re-upsert, three deletes


def test_a_write_recreates_a_collection_deleted_behind_the_stores_back_once(written):
    settings = load_settings()
    connect(settings).delete_collection(settings.chroma_collection)
    written.upsert([chunk("fresh", 0)], [vector(random.Random(5))])
    recreated = connect(settings).get_collection(settings.chroma_collection)
    assert recreated.count() == 1 and recreated.metadata == {"embedder": EMBEDDER}
    assert recreated.configuration_json["hnsw"]["space"] == "cosine"


def test_a_write_to_a_collection_of_another_embedder_is_refused(written):
    with pytest.raises(ConfigError, match=f"holds vectors of {EMBEDDER}"):
        VectorStore(load_settings(), "other-embedder/16").upsert([chunk("x", 0)], [[0.1] * DIMENSIONS])
    assert written.count() == len(CHUNKS)


def test_writes_send_the_token_and_no_chromadb_requests(collection, monkeypatch):
    with_token(monkeypatch)
    settings = load_settings()
    wire = Recording()
    store = VectorStore(settings, EMBEDDER, transport=wire)
    store.upsert(CHUNKS[:2], [vector(random.Random(i)) for i in range(2)])
    store.delete_ids([CHUNKS[0].id])
    base = f"/api/v2/tenants/{settings.chroma_tenant}/databases/{settings.chroma_database}/collections"
    paths = [(r.method, r.url.path.removeprefix(base)) for r in wire.requests]
    collection_id = paths[1][1].split("/")[1]
    assert paths == [
        ("POST", ""),
        ("POST", f"/{collection_id}/upsert"),
        ("GET", f"/{collection}"),  # the delete looks the collection up by name first: it never creates one
        ("POST", f"/{collection_id}/delete"),
    ]
    assert {r.headers.get("x-chroma-token") for r in wire.requests} == {TOKEN}
    assert store.count() == 1


def test_a_write_to_an_unreachable_server_is_unavailable(monkeypatch):
    monkeypatch.setenv("CHROMA_URL", "http://127.0.0.1:9")
    with pytest.raises(VectorStoreUnavailable, match=r"Chroma could not be reached") as caught:
        VectorStore(load_settings(), EMBEDDER).upsert([chunk("x", 0)], [[0.1] * DIMENSIONS])
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_a_refused_write_is_unavailable_with_chromas_words_in_the_log_only(written, caplog):
    with pytest.raises(VectorStoreUnavailable, match=r"refused the request \(HTTP 400\)$") as caught:
        written.upsert([chunk("x", 0)], [[0.1] * (DIMENSIONS + 1)])  # wrong dimension
    refused = [r for r in caplog.records if r.getMessage() == "chroma refused a request"]
    assert [r.__dict__["error_type"] for r in refused] == ["InvalidArgumentError"]
    detail = refused[0].__dict__["detail"]
    assert "dimension" in detail.lower() and detail not in str(caught.value)
    assert written.count() == len(CHUNKS)


SEARCH_IN_A_FRESH_PROCESS = """
import asyncio, sys
from rag_orchestrator.config import load_settings
from rag_orchestrator.retrieval.knowledge_base import create_knowledge_base
from rag_orchestrator.retrieval.search import SearchQuery, create_retriever
settings = load_settings()
retriever = create_retriever(settings, create_knowledge_base(settings), None)
found = asyncio.run(retriever.search(SearchQuery("wild yeast sourdough starter", 2, 0.0)))
print(found[0].document_id)
print(sorted(m for m in sys.modules if m.split(".")[0] == "chromadb"))
"""


def test_a_search_never_imports_chromadb(collection):
    ingest(
        [
            {"documentId": "bread", "title": "Sourdough", "text": "A starter is wild yeast fed with flour."},
            {"documentId": "deploy", "title": "Deploying", "text": "Deploy with sam build and sam deploy."},
        ],
        load_settings(),
    )
    env = {**os.environ, "PYTHONPATH": str(LAYER)}
    result = subprocess.run(
        [sys.executable, "-c", SEARCH_IN_A_FRESH_PROCESS],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=60,
    )
    assert result.stdout.splitlines()[-2:] == ["bread", "[]"]
