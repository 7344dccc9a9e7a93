"""Every request body is built when the app is, so its first request builds nothing and warns of
nothing (domain/base.py RequestBody)."""

from __future__ import annotations

from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from rag_orchestrator.api.app import ALL_ROUTERS, create_app


def body_routes(app) -> list[APIRoute]:
    """The routes taking a body, in each router the app includes (FastAPI keeps them per router)."""
    routers = [
        mounted.original_router for mounted in app.router.routes if hasattr(mounted, "original_router")
    ]
    return [
        r for router in routers for r in router.routes if isinstance(r, APIRoute) and r.body_field is not None
    ]


def test_every_body_is_ready_before_the_first_request():
    routes = body_routes(create_app(ALL_ROUTERS))
    assert len(routes) >= 10
    unbuilt = [route.path for route in routes if not route.body_field._type_adapter.pydantic_complete]
    assert unbuilt == []


def test_the_first_body_a_fresh_app_validates_warns_of_nothing(recwarn):
    client = TestClient(create_app(["conversations"]), headers={"X-Caller-Id": "alice"})
    assert client.post("/api/v1/chat/conversations", json={"title": "Trip"}).status_code == 201
    assert [str(w.message) for w in recwarn] == []
