"""A declared route (api/routing.py) answers every request as FastAPI answers it.

The same declaration is served twice: by api/endpoints.py in the Starlette app (as the streaming
function serves it), and by FastAPI itself through the route api/openapi_routes.py makes of it for the
document. Each request below, valid or not, gets the same status, content type and body from both
(the error JSON's timestamp and request id aside): the order of checks (a dependency's 401 before the
body's 422, unreadable JSON before either), each parameter's source and constraints, the error messages
and the response model's aliases.
"""

from __future__ import annotations

import asyncio

import pytest
from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, Field
from starlette.requests import Request
from starlette.testclient import TestClient

from rag_orchestrator.api.app import StreamApp, create_app, mount
from rag_orchestrator.api.errors import install_error_handlers
from rag_orchestrator.api.middleware import BodySizeLimitMiddleware, RequestContextMiddleware
from rag_orchestrator.api.openapi_routes import api_route
from rag_orchestrator.api.routing import Body, Depends, Header, Path, Query, Router
from rag_orchestrator.domain.base import CamelModel
from rag_orchestrator.errors import Unauthorized

strict = Router(prefix="/things", tags=["things"])
lenient = Router(prefix="/lenient", bad_request=True)


class Item(BaseModel):
    name: str = Field(max_length=5)
    count: int = Field(ge=0)


class Added(CamelModel):
    item_name: str
    thing_id: str
    seen: int | None
    last_event_id: str | None


def who(request: Request) -> str:
    caller = request.headers.get("x-who")
    if not caller:
        raise Unauthorized("Authentication required")
    return caller


async def add(
    body: Item,
    request: Request,
    thing_id: str = Path(..., min_length=2, max_length=8),
    after: int | None = Query(None, ge=0, description="documentation only"),
    last_event_id: str | None = Header(None, max_length=10),
    caller: str = Depends(who),
) -> Added:
    assert request.url.path.endswith("/items")
    return Added(
        item_name=f"{caller}:{body.name}", thing_id=thing_id, seen=after, last_event_id=last_event_id
    )


def optional(body: Item | None = Body(None)) -> dict:
    return {"body": body.model_dump() if body else None}


def where(request: Request) -> str:
    """Where a plain dependency runs: off the event loop, in the thread pool, as FastAPI runs it."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return "thread"
    return "event loop"


async def where_async(request: Request) -> str:
    return where(request)


async def located(plain: str = Depends(where), coroutine: str = Depends(where_async)) -> dict:
    return {"plain": plain, "coroutine": coroutine}


strict.get("/located")(located)
for router in (strict, lenient):
    router.post("/{thing_id}/items", response_model=Added, status_code=201)(add)
    router.post("/optional")(optional)


def declared_app() -> TestClient:
    app = create_app(["health"])
    assert isinstance(app, StreamApp)
    mount(app, strict)
    mount(app, lenient)
    return TestClient(app, raise_server_exceptions=False)


def fastapi_app() -> TestClient:
    app = FastAPI()
    install_error_handlers(app, RequestValidationError)
    app.router.routes.extend(api_route(spec) for spec in (*strict.routes, *lenient.routes))
    app.add_middleware(BodySizeLimitMiddleware, max_bytes=1_000_000)
    app.add_middleware(RequestContextMiddleware)
    return TestClient(app, raise_server_exceptions=False)


JSON = {"content-type": "application/json"}
CALLER = {"x-who": "ann"}
GOOD = b'{"name": "pen", "count": 2}'

REQUESTS = {
    "valid": ("/ID/ab/items?after=3", {**CALLER, **JSON, "last-event-id": "ab:1"}, GOOD),
    "valid, no optional parameters": ("/ID/abc/items", {**CALLER, **JSON}, GOOD),
    "a body field too long": ("/ID/ab/items", {**CALLER, **JSON}, b'{"name": "pencils", "count": 2}'),
    "two body fields wrong": ("/ID/ab/items", {**CALLER, **JSON}, b'{"count": -1}'),
    "an extra field is ignored": ("/ID/ab/items", {**CALLER, **JSON}, b'{"name": "a", "count": 0, "x": 1}'),
    "a string number is coerced": ("/ID/ab/items", {**CALLER, **JSON}, b'{"name": "a", "count": "7"}'),
    "a path parameter too short": ("/ID/a/items", {**CALLER, **JSON}, GOOD),
    "a path parameter too long": ("/ID/abcdefghij/items", {**CALLER, **JSON}, GOOD),
    "a query parameter below its minimum": ("/ID/ab/items?after=-1", {**CALLER, **JSON}, GOOD),
    "a query parameter not a number": ("/ID/ab/items?after=x", {**CALLER, **JSON}, GOOD),
    "an empty query parameter": ("/ID/ab/items?after=", {**CALLER, **JSON}, GOOD),
    "a header too long": ("/ID/ab/items", {**CALLER, **JSON, "last-event-id": "x" * 11}, GOOD),
    "every input wrong at once": (
        "/ID/a/items?after=-2",
        {**CALLER, **JSON, "last-event-id": "y" * 11},
        b"{}",
    ),
    "no caller, a bad body": ("/ID/ab/items", JSON, b'{"count": -1}'),
    "no caller, unreadable JSON": ("/ID/ab/items", JSON, b"{not json"),
    "unreadable JSON": ("/ID/ab/items", {**CALLER, **JSON}, b'{"name": '),
    "not UTF-8": ("/ID/ab/items", {**CALLER, **JSON}, b'{"name": "\xff\xfe", "count": 1}'),
    "a lone surrogate escape": ("/ID/ab/items", {**CALLER, **JSON}, b'{"name": "\\ud800", "count": 1}'),
    "not sent as JSON": ("/ID/ab/items", {**CALLER, "content-type": "text/plain"}, GOOD),
    "no content type": ("/ID/ab/items", CALLER, GOOD),
    "a JSON suffix type": ("/ID/ab/items", {**CALLER, "content-type": "application/merge-patch+json"}, GOOD),
    "JSON with parameters": (
        "/ID/ab/items",
        {**CALLER, "content-type": "application/json; charset=utf-8"},
        GOOD,
    ),
    "no body": ("/ID/ab/items", {**CALLER, **JSON}, b""),
    "a JSON null body": ("/ID/ab/items", {**CALLER, **JSON}, b"null"),
    "a JSON array body": ("/ID/ab/items", {**CALLER, **JSON}, b"[1, 2]"),
    "an optional body, absent": ("/ID/optional", JSON, b""),
    "an optional body, given": ("/ID/optional", JSON, b'{"name": "a", "count": 1}'),
    "an optional body, wrong": ("/ID/optional", JSON, b'{"name": 5}'),
    "an optional body, not JSON": ("/ID/optional", {"content-type": "text/plain"}, b"name=a"),
}


def answer(client: TestClient, method: str, path: str, headers: dict, content: bytes) -> tuple:
    response = client.request(method, path, headers=headers, content=content)
    kind = response.headers.get("content-type")
    if kind != "application/json" or not response.content:  # a HEAD's answer has no body
        return response.status_code, kind, response.text
    body = response.json()
    if isinstance(body, dict):
        body.pop("timestamp", None)
        body.pop("requestId", None)
    return response.status_code, kind, body


@pytest.fixture(scope="module")
def clients() -> tuple[TestClient, TestClient]:
    return declared_app(), fastapi_app()


@pytest.mark.parametrize("prefix", ["/things", "/lenient"])
@pytest.mark.parametrize("case", list(REQUESTS))
def test_a_declared_route_answers_as_fastapi_does(clients, prefix, case):
    path, headers, content = REQUESTS[case]
    ours, fastapis = (
        answer(client, "POST", path.replace("/ID", prefix), headers, content) for client in clients
    )
    assert ours == fastapis


def test_the_cases_cover_success_and_every_kind_of_refusal(clients):
    statuses = {answer(clients[0], "POST", "/things" + p[3:], h, c)[0] for p, h, c in REQUESTS.values()}
    assert statuses == {200, 201, 400, 401, 415, 422}
    path, headers, content = REQUESTS["valid"]
    valid = answer(clients[0], "POST", path.replace("/ID", "/things"), headers, content)
    assert valid == (
        201,
        "application/json",
        {"itemName": "ann:pen", "thingId": "ab", "seen": 3, "lastEventId": "ab:1"},
    )
    lenient_errors = {
        answer(clients[0], "POST", "/lenient" + p[3:], h, c)[0] for p, h, c in REQUESTS.values()
    }
    assert 422 not in lenient_errors


@pytest.mark.parametrize(
    ("method", "path"), [("GET", "/things/ab/items"), ("HEAD", "/things/ab/items"), ("POST", "/nowhere")]
)
def test_a_wrong_method_or_path_answers_as_fastapi_does(clients, method, path):
    ours, fastapis = (answer(client, method, path, CALLER, b"") for client in clients)
    assert ours == fastapis and ours[0] in (404, 405)


def test_a_plain_dependency_waits_in_the_thread_pool_as_under_fastapi(clients):
    ours, fastapis = (answer(client, "GET", "/things/located", {}, b"") for client in clients)
    assert ours == fastapis == (200, "application/json", {"plain": "thread", "coroutine": "event loop"})


def test_an_input_without_a_declared_source_stops_the_app_being_built():
    router = Router()

    @router.get("/x")
    def undeclared(value: str) -> dict:
        return {}

    app = create_app(["health"])
    with pytest.raises(TypeError, match="value: declare where it comes from"):
        mount(app, router)
