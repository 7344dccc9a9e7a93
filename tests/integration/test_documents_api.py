"""Knowledge-base writes (docs/documents.md): KB_WRITER_ROLES on /ingest, GET and DELETE /api/v1/documents,
on the moto server (the registry in the table) and a real Chroma server."""

from __future__ import annotations

import uuid

import pytest
from fastapi.testclient import TestClient

from rag_orchestrator.api.app import ALL_ROUTERS, create_app
from rag_orchestrator.config import load_settings
from rag_orchestrator.retrieval.registry import DynamoDocumentRegistry
from tests.integration.knowledge import ingest, knowledge

pytestmark = pytest.mark.integration

ADMIN = {"X-Caller-Id": "root", "X-Caller-Roles": "admin"}
USER = {"X-Caller-Id": "alice"}
DOCS = [
    {
        "documentId": "harbour/tides.md",
        "title": "Tide tables",
        "text": "High water comes later each day.",
        "source": "harbour-office",
        "tags": ["tides", "harbour"],
    },
    {"documentId": "lighthouse", "title": "Lighthouse", "text": "The keeper logged forty storms."},
    {"documentId": "zoo", "title": "Zoo", "text": "The penguins are fed at noon."},
]


@pytest.fixture
def kb(own_tables, chroma_url, monkeypatch) -> TestClient:
    monkeypatch.setenv("CHROMA_COLLECTION", f"docs-{uuid.uuid4().hex[:12]}")
    return TestClient(create_app(ALL_ROUTERS))


def assert_error(response, status: int) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error", "message", "timestamp", "requestId"}
    return body


def test_writers_ingest_list_page_and_delete_documents(kb):
    ingested = kb.post("/api/v1/ingest", json={"documents": DOCS}, headers=ADMIN)
    assert ingested.status_code == 200, ingested.text
    assert isinstance(knowledge(load_settings()).registry, DynamoDocumentRegistry)

    listed = kb.get("/api/v1/documents", headers=ADMIN).json()
    assert listed["nextCursor"] is None
    first = listed["items"][0]
    assert set(first) == {"documentId", "title", "source", "tags", "chunks", "updatedAt"}
    assert (first["documentId"], first["title"], first["source"], first["tags"], first["chunks"]) == (
        "harbour/tides.md",
        "Tide tables",
        "harbour-office",
        ["tides", "harbour"],
        1,
    )
    assert [d["documentId"] for d in listed["items"]] == ["harbour/tides.md", "lighthouse", "zoo"]

    pages, cursor = [], None
    while True:
        page = kb.get(
            "/api/v1/documents", params={"limit": 2, **({"cursor": cursor} if cursor else {})}, headers=ADMIN
        )
        pages.append([d["documentId"] for d in page.json()["items"]])
        cursor = page.json()["nextCursor"]
        if cursor is None:
            break
    assert pages == [["harbour/tides.md", "lighthouse"], ["zoo"]]
    assert_error(kb.get("/api/v1/documents", params={"cursor": "forged.cursor"}, headers=ADMIN), 400)

    chunks = knowledge(load_settings()).store
    assert chunks.count("harbour/tides.md") == 1
    assert kb.delete("/api/v1/documents/harbour/tides.md", headers=ADMIN).status_code == 204
    assert chunks.count("harbour/tides.md") == 0 and chunks.count("zoo") == 1
    assert [d["documentId"] for d in kb.get("/api/v1/documents", headers=ADMIN).json()["items"]] == [
        "lighthouse",
        "zoo",
    ]
    assert_error(kb.delete("/api/v1/documents/harbour/tides.md", headers=ADMIN), 404)
    assert_error(kb.delete("/api/v1/documents/never-ingested", headers=ADMIN), 404)


def test_everyone_else_gets_403(kb, monkeypatch):
    for headers in (USER, {"X-Caller-Id": "mo", "X-Caller-Roles": "moderator"}):
        assert_error(kb.post("/api/v1/ingest", json={"documents": DOCS[:1]}, headers=headers), 403)
        assert_error(kb.get("/api/v1/documents", headers=headers), 403)
        assert_error(kb.delete("/api/v1/documents/zoo", headers=headers), 403)
    assert_error(kb.get("/api/v1/documents"), 401)  # no caller at all
    monkeypatch.setenv("ALLOW_ANONYMOUS", "true")
    anonymous = TestClient(create_app(ALL_ROUTERS))
    assert_error(anonymous.post("/api/v1/ingest", json={"documents": DOCS[:1]}), 403)
    guest = anonymous.post("/api/v1/auth/guest").json()["token"]
    assert_error(anonymous.get("/api/v1/documents", headers={"Authorization": f"Bearer {guest}"}), 403)


def test_kb_writer_roles_names_who_may_write(kb, monkeypatch):
    monkeypatch.setenv("KB_WRITER_ROLES", "admin, moderator")
    client = TestClient(create_app(ALL_ROUTERS))
    mod = {"X-Caller-Id": "mo", "X-Caller-Roles": "mod"}
    assert client.post("/api/v1/ingest", json={"documents": DOCS[2:]}, headers=mod).status_code == 200
    assert [d["documentId"] for d in client.get("/api/v1/documents", headers=mod).json()["items"]] == ["zoo"]
    assert_error(client.get("/api/v1/documents", headers=USER), 403)


def test_a_document_ingested_before_the_registry_can_still_be_deleted(kb):
    settings = load_settings()
    ingest(DOCS[1:2], settings)
    knowledge(settings).registry.remove("lighthouse")  # as if ingested before the registry existed
    assert kb.get("/api/v1/documents", headers=ADMIN).json()["items"] == []
    assert kb.delete("/api/v1/documents/lighthouse", headers=ADMIN).status_code == 204
    assert knowledge(settings).store.count("lighthouse") == 0
