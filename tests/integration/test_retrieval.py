"""Retrieval against a real Chroma server: ingest, query, filters, replace, delete, threshold, the two routes."""

from __future__ import annotations

import uuid

import pytest
from fastapi.testclient import TestClient

from rag_orchestrator.api.app import create_app
from rag_orchestrator.config import load_settings
from rag_orchestrator.errors import ConfigError, VectorStoreUnavailable
from rag_orchestrator.retrieval.ingestion import stable_document_id
from rag_orchestrator.retrieval.query_vector import QueryVector
from rag_orchestrator.retrieval.vector_store import VectorStore
from rag_orchestrator.text.hashing import HashingEmbedder
from tests.integration.knowledge import asearch, ingest, knowledge, search

pytestmark = pytest.mark.integration

CALLER = {"X-Caller-Id": "tester", "X-Caller-Roles": "admin"}  # a KB_WRITER_ROLES role

DOCS = [
    {
        "documentId": "chroma-guide",
        "title": "Running Chroma",
        "text": "Chroma runs as a separate server. The functions reach it over HTTP with the chromadb client, "
        "and the collection uses cosine distance.",
        "source": "ops-wiki",
        "tags": ["chroma", "ops"],
    },
    {
        "documentId": "bread",
        "title": "Sourdough bread",
        "text": "A sourdough starter is a culture of wild yeast and lactic acid bacteria fed with flour and water.",
        "source": "kitchen",
        "tags": ["baking"],
    },
    {
        "documentId": "deploy",
        "title": "Deploying with SAM",
        "text": "Deploy the stack with sam build and sam deploy --guided. The Chroma server URL is a parameter.",
        "source": "ops-wiki",
        "tags": ["deploy", "ops"],
    },
]


@pytest.fixture
def collection(chroma_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A collection of its own for each test, so tests stay independent."""
    name = f"test-{uuid.uuid4().hex[:12]}"
    monkeypatch.setenv("CHROMA_COLLECTION", name)
    return name


def ids(passages) -> list[str]:
    return [p.document_id for p in passages]


def long_text(paragraphs: int) -> str:
    return "\n\n".join(
        f"Paragraph {i} of the handbook explains step {i} of the release process in some detail. "
        f"It mentions checklists, approvals and rollbacks for stage {i}."
        for i in range(paragraphs)
    )


def test_ingest_then_query_finds_the_right_document(collection):
    settings = load_settings()
    result = ingest(DOCS, settings)
    assert result == [{"documentId": d["documentId"], "chunks": 1} for d in DOCS]
    assert knowledge(settings).store.count() == 3

    passages = search(
        "how do the functions talk to the chroma server?", top_k=3, threshold=0.0, settings=settings
    )
    assert passages[0].document_id == "chroma-guide"
    best = passages[0]
    assert (best.title, best.chunk_index, best.source, best.tags) == (
        "Running Chroma",
        0,
        "ops-wiki",
        ["chroma", "ops"],
    )
    assert best.text.startswith("Chroma runs as a separate server.")
    assert 0.0 < best.score <= 1.0
    assert [p.score for p in passages] == sorted((p.score for p in passages), reverse=True)


async def test_async_search_is_the_same_search(collection):
    settings = load_settings()
    ingest(DOCS, settings)
    passages = await asearch("wild yeast starter", top_k=1, threshold=0.0, settings=settings)
    assert ids(passages) == ["bread"]


class CountingEmbedder(HashingEmbedder):
    def __init__(self, dimensions: int) -> None:
        super().__init__(dimensions)
        self.texts: list[str] = []

    def embed(self, text):
        self.texts.append(text)
        return super().embed(text)


async def test_a_turns_vector_is_used_for_its_own_query_only(collection):
    settings = load_settings()
    ingest(DOCS, settings)
    embedder = CountingEmbedder(settings.embedding_dimensions)  # the same vector space as the collection's
    vector = QueryVector(embedder, "  wild yeast starter ")
    shared = await asearch("wild yeast starter", top_k=1, threshold=0.0, vector=vector, settings=settings)
    assert ids(shared) == ["bread"] and embedder.texts == ["wild yeast starter"]
    other = await asearch("sam deploy", top_k=1, threshold=0.0, vector=vector, settings=settings)
    assert ids(other) == ["deploy"] and embedder.texts == ["wild yeast starter"]  # embedded by the search


def test_filters_by_source_and_tags(collection):
    settings = load_settings()
    ingest(DOCS, settings)

    def find(**filters):
        return set(
            ids(search("chroma server deploy bread", top_k=10, threshold=0.0, settings=settings, **filters))
        )

    assert find(source="ops-wiki") == {"chroma-guide", "deploy"}
    assert find(source="kitchen") == {"bread"}
    assert find(tags=["baking"]) == {"bread"}
    assert find(tags=["ops"]) == {"chroma-guide", "deploy"}
    assert find(tags=["deploy", "baking"]) == {"deploy", "bread"}  # any of the tags
    assert find(source="ops-wiki", tags=["deploy"]) == {"deploy"}
    assert find(source="nowhere") == set()
    assert find(modality="text") == {"chroma-guide", "bread", "deploy"}


def test_same_document_id_replaces_all_old_chunks(collection):
    settings = load_settings().model_copy(update={"chunk_size": 300, "chunk_overlap": 50})
    store = knowledge(settings).store
    [first] = ingest([{"documentId": "handbook", "title": "Handbook", "text": long_text(12)}], settings)
    assert first["chunks"] > 4
    assert store.count("handbook") == first["chunks"]

    short = "The handbook was rewritten: releases now need one approval only."
    [second] = ingest([{"documentId": "handbook", "title": "Handbook", "text": short}], settings)
    assert second == {"documentId": "handbook", "chunks": 1}
    assert store.count("handbook") == 1
    assert store.count() == 1
    passages = search("release checklists approvals rollbacks", top_k=10, threshold=0.0, settings=settings)
    assert [p.text for p in passages] == [short]


def test_delete_document(collection):
    settings = load_settings()
    ingest(DOCS, settings)
    store = knowledge(settings).store
    store.delete_document("bread")
    assert store.count("bread") == 0
    assert store.count() == 2
    assert "bread" not in ids(search("sourdough", top_k=5, threshold=0.0, settings=settings))


def test_threshold_drops_weak_passages(collection):
    settings = load_settings(retrieval_mode="dense", reranker="none")  # scores are cosine similarities
    ingest(DOCS, settings)
    everything = search("sourdough starter yeast", top_k=3, threshold=0.0, settings=settings)
    assert len(everything) == 3
    cut = (everything[0].score + everything[1].score) / 2
    kept = search("sourdough starter yeast", top_k=3, threshold=cut, settings=settings)
    assert ids(kept) == ["bread"]
    assert search("sourdough starter yeast", top_k=3, threshold=1.0, settings=settings) == []


def test_in_hybrid_a_passage_holding_every_word_of_the_query_scores_one(collection):
    settings = load_settings()
    ingest(DOCS, settings)
    [best] = search("sourdough starter yeast", top_k=3, threshold=1.0, settings=settings)
    assert best.document_id == "bread" and best.score == 1.0


def test_missing_document_id_gets_a_stable_one(collection):
    settings = load_settings()
    document = {"title": "No id", "text": "A document without an id."}
    [first] = ingest([document], settings)
    [again] = ingest([document], settings)
    assert (
        first["documentId"] == again["documentId"] == stable_document_id("No id", "A document without an id.")
    )
    assert knowledge(settings).store.count() == 1


def test_a_collection_of_another_embedder_is_refused(collection):
    settings = load_settings()
    ingest(DOCS[:1], settings)
    other = VectorStore(settings, "bedrock/amazon.titan-embed-text-v2:0/1024")
    with pytest.raises(ConfigError, match="holds vectors of hashing-v2/1024"):
        other.count()


def test_closed_port_is_vector_store_unavailable(monkeypatch):
    monkeypatch.setenv("CHROMA_URL", "http://127.0.0.1:9")
    with pytest.raises(VectorStoreUnavailable):
        knowledge(load_settings()).store.count()


# ---------------------------------------------------------------------------- HTTP routes
@pytest.fixture
def client(collection) -> TestClient:
    return TestClient(create_app(["ingest", "query"]))


def test_ingest_and_query_routes(client):
    response = client.post("/api/v1/ingest", json={"documents": DOCS}, headers=CALLER)
    assert response.status_code == 200, response.json()
    assert response.json() == {
        "documents": [{"documentId": d["documentId"], "chunks": 1} for d in DOCS],
        "totalChunks": 3,
    }
    response = client.post(
        "/api/v1/query",
        json={
            "query": "deploy the chroma server with sam",
            "topK": 2,
            "similarityThreshold": 0.0,
            "source": "ops-wiki",
        },
        headers=CALLER,
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["query"] == "deploy the chroma server with sam"
    assert isinstance(body["latencyMs"], int)
    assert [r["documentId"] for r in body["results"]] == ["deploy", "chroma-guide"]
    first = body["results"][0]
    assert set(first) == {
        "documentId", "title", "chunkIndex", "score", "source", "tags", "text", "snippet", "snippetStart",
        "snippetEnd",
    }  # fmt: skip
    assert first["text"] == DOCS[2]["text"]
    assert first["snippet"] == first["text"][first["snippetStart"] : first["snippetEnd"]]
    assert first["snippet"].startswith("Deploy the stack with sam build")
    assert first["tags"] == ["deploy", "ops"]


def test_query_shows_a_fact_from_the_middle_of_a_chunk(client):
    before = " ".join(
        f"Section {i} of the facilities handbook covers parking, badges and visitors." for i in range(5)
    )
    after = " ".join(
        f"Section {i} explains the cafeteria opening hours and the recycling rules." for i in range(5, 9)
    )
    fact = "The vault door code is 4417 and only the night manager may change it."
    text = f"{before} {fact} {after}"
    # One chunk, and the fact past the 300 characters the snippet used to take from its start.
    assert text.index(fact) > 300 and len(text) < 800
    document = {"documentId": "handbook", "title": "Facilities handbook", "text": text}
    client.post("/api/v1/ingest", json={"documents": [document, *DOCS]}, headers=CALLER)

    response = client.post(
        "/api/v1/query",
        json={"query": "What is the code of the vault door?", "similarityThreshold": 0.0},
        headers=CALLER,
    )
    best = response.json()["results"][0]
    assert (best["documentId"], best["chunkIndex"]) == ("handbook", 0)
    assert best["text"] == text
    assert fact in best["snippet"] and len(best["snippet"]) <= 300
    assert best["snippet"] == text[best["snippetStart"] : best["snippetEnd"]]
    assert 0 < best["snippetStart"] <= text.index(fact)


def test_query_defaults_come_from_settings(client, monkeypatch):
    client.post("/api/v1/ingest", json={"documents": DOCS}, headers=CALLER)
    # The default threshold (0.6) is far above what hashing gives a paraphrased question.
    response = client.post("/api/v1/query", json={"query": "what feeds a sourdough culture"}, headers=CALLER)
    assert response.json()["results"] == []
    monkeypatch.setenv("RAG_SIMILARITY_THRESHOLD", "0.05")
    monkeypatch.setenv("RAG_TOPK_DEFAULT", "1")
    client = TestClient(create_app(["query"]))  # settings are read when an app is built
    response = client.post("/api/v1/query", json={"query": "what feeds a sourdough culture"}, headers=CALLER)
    assert [r["documentId"] for r in response.json()["results"]] == ["bread"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"query": ""}, "query"),
        ({"query": "   "}, "query"),
        ({}, "query"),
        ({"query": "x" * 2001}, "query"),
        ({"query": "ok", "topK": 0}, "topK"),
        ({"query": "ok", "topK": -3}, "topK"),
        ({"query": "ok", "topK": 11}, "topK"),
        ({"query": "ok", "topK": "many"}, "topK"),
        ({"query": "ok", "topK": True}, "topK"),  # another type, not the number 1
        ({"query": "ok", "topK": "5"}, "topK"),
        ({"query": "ok", "similarityThreshold": True}, "similarityThreshold"),
        ({"query": "ok", "similarityThreshold": "0.5"}, "similarityThreshold"),
        ({"query": "ok", "similarityThreshold": 1.5}, "similarityThreshold"),
        ({"query": "ok", "similarityThreshold": -0.1}, "similarityThreshold"),
        ({"query": "ok", "unknown": 1}, "unknown"),
    ],
)
def test_query_refuses_bad_input_with_400(client, body, message):
    response = client.post("/api/v1/query", json=body, headers=CALLER)
    assert response.status_code == 400
    error = response.json()
    assert set(error) == {"error", "message", "timestamp", "requestId"}
    assert message in error["message"]


@pytest.mark.parametrize(
    "documents",
    [
        [],
        [{"title": "   ", "text": "body"}],
        [{"title": "T", "text": ""}],
        [{"title": "T", "text": "body", "extra": 1}],
        [{"title": "T", "text": "body", "tags": ["x" * 65]}],
        [{"documentId": "a\nb", "title": "T", "text": "body"}],
        [{"documentId": "a", "title": "T", "text": "one"}, {"documentId": "a", "title": "U", "text": "two"}],
        [{"title": "T", "text": "same"}, {"title": "T", "text": "same"}],
        [{"title": "T", "text": "\u200b\ufeff \u2060"}],  # invisible characters alone are blank
        [{"documentId": "\U0001f600" * 251, "title": "T", "text": "body"}],  # 251 characters, 1004 bytes
    ],
)
def test_ingest_refuses_bad_documents(client, documents):
    response = client.post("/api/v1/ingest", json={"documents": documents}, headers=CALLER)
    assert response.status_code == 422
    assert set(response.json()) == {"error", "message", "timestamp", "requestId"}


def test_a_refused_document_leaves_the_one_of_its_id_whole(client):
    """Invisible-only text was ingested as a document of no chunks, replacing the old one's."""
    kept = {"documentId": "kept", "title": "Kept", "text": "The depot in Utrecht takes returns."}
    assert client.post("/api/v1/ingest", json={"documents": [kept]}, headers=CALLER).status_code == 200
    blank = {**kept, "text": "\u200b"}
    assert client.post("/api/v1/ingest", json={"documents": [blank]}, headers=CALLER).status_code == 422
    found = client.post("/api/v1/query", json={"query": "Utrecht depot returns"}, headers=CALLER).json()
    assert [r["documentId"] for r in found["results"]][:1] == ["kept"]


def test_routes_need_a_caller(client):
    assert client.post("/api/v1/query", json={"query": "x"}).status_code == 401
    assert client.post("/api/v1/ingest", json={"documents": DOCS}).status_code == 401


def test_routes_answer_503_when_chroma_is_down(monkeypatch):
    monkeypatch.setenv("CHROMA_URL", "http://127.0.0.1:9")
    client = TestClient(create_app(["ingest", "query"]))
    for path, body in (("/api/v1/query", {"query": "anything"}), ("/api/v1/ingest", {"documents": DOCS})):
        response = client.post(path, json=body, headers=CALLER)
        assert response.status_code == 503
        error = response.json()
        assert error["error"] == "Knowledge base unavailable"
        assert error["message"] == "Chroma could not be reached; try again later"
        assert response.headers["retry-after"] == "5"
