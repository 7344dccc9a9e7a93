"""Every request body is built when the app is, so its first request builds nothing and warns of
nothing (domain/base.py RequestBody)."""

from __future__ import annotations

from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from pydantic import TypeAdapter

from rag_orchestrator.api.app import ALL_ROUTERS, STREAM_ROUTERS, create_app
from rag_orchestrator.api.endpoints import SpecRoute


def body_routes(app) -> list[APIRoute]:
    """The routes taking a body, in each router the app includes (FastAPI keeps them per router)."""
    routers = [
        mounted.original_router for mounted in app.router.routes if hasattr(mounted, "original_router")
    ]
    return [
        r for router in routers for r in router.routes if isinstance(r, APIRoute) and r.body_field is not None
    ]


def declared_bodies(app) -> dict[str, TypeAdapter]:
    """The body validators of the routes served by api/endpoints.py (declared with api/routing.py)."""
    return {
        f"{route.spec.method} {route.path}": item.adapter
        for route in app.router.routes
        if isinstance(route, SpecRoute)
        for item in route.inputs
        if item.source == "body"
    }


def test_every_body_is_ready_before_the_first_request():
    app = create_app(ALL_ROUTERS)
    routes = body_routes(app)
    assert len(routes) >= 5
    unbuilt = [route.path for route in routes if not route.body_field._type_adapter.pydantic_complete]
    assert unbuilt == []
    declared = declared_bodies(app)
    assert len(declared) >= 8
    assert [name for name, adapter in declared.items() if not adapter.pydantic_complete] == []


def test_the_first_turn_body_of_a_fresh_stream_app_warns_of_nothing(recwarn):
    app = create_app(STREAM_ROUTERS)
    assert declared_bodies(app)
    response = TestClient(app).post("/api/v1/chat/conversations/x/messages/stream", json={"message": 1})
    assert response.status_code == 401  # no caller: the body is still read and parsed first
    assert [str(w.message) for w in recwarn] == []


def test_the_first_body_a_fresh_app_validates_warns_of_nothing(recwarn):
    client = TestClient(create_app(["conversations"]), headers={"X-Caller-Id": "alice"})
    assert client.post("/api/v1/chat/conversations", json={"title": "Trip"}).status_code == 201
    assert [str(w.message) for w in recwarn] == []
