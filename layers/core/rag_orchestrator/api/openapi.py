"""The OpenAPI document, told true centrally for every route (docs/api.md).

FastAPI documents each route's parameters, body and success. `describe` adds what it cannot know,
derived from what each route has, so a route added later is described with no edit here:

    the route has                                  it may answer (each with the error JSON)
    a JSON body                                    400 unreadable JSON or text, 413, 415, 422
    parameters (a BadRequestRoute: 400, no 422)    422
    a `cursor` parameter                           400 a cursor this service did not issue
    a caller (get_caller, get_owner, get_asker)    401, and 503 (storage, knowledge base, identity keys)
    a role check (require_roles)                   403, naming the roles
    a path parameter                               404
    a turn (get_orchestrator)                      409 in a conversation, 429 with budgets, and 502
                                                   when the turn is answered whole
    a generated answer (get_answers)               429 with budgets
    a model call of its own (get_strategy)         502
    a status it declares itself (`responses=`)     its description kept, the error JSON added

FastAPI's own 422 body (`{detail}`), which this service never sends, goes. 401 declares
`WWW-Authenticate`, 429/502/503 `Retry-After`. A 200 of `text/event-stream` with no schema of its own
is the native chat stream. Security: bearer tokens always (identity JWTs and guest tokens); the
dev caller headers (id, roles, claims) only when AUTH_MODE=dev, so "Try it out" on /docs works
under `make dev`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, cast

from fastapi.dependencies.models import Dependant
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute, RouteContext, iter_route_contexts
from starlette.applications import Starlette
from starlette.routing import BaseRoute

from rag_orchestrator import __version__
from rag_orchestrator.api import auth
from rag_orchestrator.api.deps import get_answers, get_orchestrator, get_strategy
from rag_orchestrator.api.docs_page import DESCRIPTION, TITLE
from rag_orchestrator.api.openapi_routes import BadRequestRoute, documented
from rag_orchestrator.api.sse import CHAT_STREAM, event_stream
from rag_orchestrator.config import Settings

_WHY = {
    400: "The body is not valid JSON, or a string holds a lone surrogate or a control character",
    401: "No caller, or credentials that do not verify",
    404: "Not found, or another caller's (the same answer)",
    409: "A turn is already running in this conversation, or this message was already received",
    413: "The body exceeds MAX_REQUEST_BYTES",
    415: "The body was not sent as JSON (Content-Type: application/json)",
    422: "The JSON breaks the body's or a parameter's schema",
    429: "The caller's token budget for the UTC day is spent, or held by its running turns "
    "(BUDGET_TOKENS_PER_DAY; a guest's GUEST_TOKENS_PER_DAY, all guests' GUEST_TOKENS_PER_DAY_TOTAL)",
    502: "The model provider failed",
    503: "A dependency failed or is throttled: storage, the knowledge base, the embedder or the identity "
    "provider's signing keys",
}
_RETRY_AFTER = {
    "description": "Seconds to wait before trying again (when trying again may help)",
    "schema": {"type": "integer", "minimum": 1},
}
_HEADERS = {
    401: {"WWW-Authenticate": {"description": "Bearer", "schema": {"type": "string"}, "required": True}},
    **{status: {"Retry-After": _RETRY_AFTER} for status in (429, 502, 503)},
}
_SSE = "text/event-stream"


def document(app: Starlette, settings: Settings) -> dict[str, Any]:
    """The app's document, built by FastAPI from every route as FastAPI's own (api/openapi_routes.py)
    and described; built again only when the app's routes change."""
    key = tuple(map(id, app.routes))
    kept = getattr(app.state, "openapi_document", None)
    if kept is not None and kept[0] == key:
        return cast(dict[str, Any], kept[1])
    routes = documented(app.routes)
    built = get_openapi(title=TITLE, version=__version__, description=DESCRIPTION, routes=routes)
    describe(built, routes, settings)
    app.state.openapi_document = (key, built)
    return built


def describe(document: dict[str, Any], routes: Iterable[BaseRoute], settings: Settings) -> None:
    from rag_orchestrator.api.openapi_schemas import REQUEST_EXAMPLES, stream_components

    components = document.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    for name, schema in stream_components().items():
        event = schema.get("properties", {}).get("type", {}).get("const") == name
        if event or name not in schemas:  # an event is the stream's, also where a body holds one
            schemas[name] = schema
    for name, example in REQUEST_EXAMPLES.items():
        if name in schemas:
            schemas[name]["examples"] = [example]
    components["securitySchemes"] = security_schemes(settings)
    for route in iter_route_contexts(list(routes)):
        if not isinstance(route.original_route, APIRoute) or not route.include_in_schema:
            continue
        for method in route.methods or ():
            operation = document["paths"][route.path_format][method.lower()]
            _describe_operation(operation, route, settings)
    for unused in ("HTTPValidationError", "ValidationError"):
        schemas.pop(unused, None)


def _describe_operation(operation: dict[str, Any], route: RouteContext, settings: Settings) -> None:
    from rag_orchestrator.api.openapi_schemas import ERROR, ref

    responses = operation["responses"]
    responses.pop("422", None)  # FastAPI's {detail}; added back below where the route can answer it
    for status, why in refusals(route, settings).items():
        responses.setdefault(str(status), {"description": why})
    for status, response in responses.items():
        if int(status) < 400 or "content" in response:  # a body of its own (the health report's 503)
            continue
        response["content"] = {"application/json": {"schema": ref(ERROR)}}
        if headers := _HEADERS.get(int(status)):
            response["headers"] = headers
    success = responses.get("200", {}).get("content", {})
    if _SSE in success and not success[_SSE].get("schema"):
        success.update(event_stream(CHAT_STREAM))
    if _SSE in success and not success.get("application/json", {}).get("schema"):
        success.pop("application/json", None)  # FastAPI's default, for a route that only streams
    operation["responses"] = dict(sorted(responses.items()))
    if security := _security(route, settings):
        operation["security"] = security


def refusals(route: RouteContext, settings: Settings) -> dict[int, str]:
    """Every error status the route can answer, with why, derived from its parameters and dependencies."""
    parts = list(_walk(route.dependant))
    calls = {part.call for part in parts}
    path = [param for part in parts for param in part.path_params]
    query = [param for part in parts for param in part.query_params]
    found: dict[int, str] = {}
    if route.body_field is not None:
        found.update({status: _WHY[status] for status in (400, 413, 415)})
    if route.body_field is not None or path or query or any(part.header_params for part in parts):
        if isinstance(route.original_route, BadRequestRoute):
            found[400] = "Invalid input: unreadable JSON or a value out of range (every input error is a 400)"
        else:
            found[422] = _WHY[422]
    if any(param.alias == "cursor" for param in query):
        found[400] = found.get(400, "A `cursor` this service did not issue")
    if _has_caller(calls):
        found.update({401: _WHY[401], 503: _WHY[503]})
    for check in calls:
        if isinstance(check, auth.RoleCheck):
            found[403] = f"The caller has none of the roles {', '.join(check.allowed(settings))}"
    if path:
        found[404] = _WHY[404]
    if get_orchestrator in calls:
        if any(param.alias == "conversation_id" for param in path):  # a conversation's turn lock
            found[409] = _WHY[409]
        if not _streams(route):
            found[502] = _WHY[502]
    spends = get_orchestrator in calls or get_answers in calls
    if spends and (settings.budgets.configured or settings.allow_anonymous):  # where budgets apply (guests')
        found[429] = _WHY[429]
    if get_strategy in calls:
        found[502] = _WHY[502]
    return dict(sorted(found.items()))


def _has_caller(calls: set[Any]) -> bool:
    """Whether the route finds its caller: itself, as an owner, or to check a role."""
    return any(
        call in (auth.get_caller, auth.get_owner, auth.get_asker) or isinstance(call, auth.RoleCheck)
        for call in calls
    )


def _walk(dependant: Dependant) -> Iterator[Dependant]:
    """The route's dependant and every dependency under it."""
    yield dependant
    for dependency in dependant.dependencies:
        yield from _walk(dependency)


def _streams(route: RouteContext) -> bool:
    success = (route.responses or {}).get(200, {})
    return _SSE in success.get("content", {})


def security_schemes(settings: Settings) -> dict[str, Any]:
    schemes: dict[str, Any] = {
        "bearer": {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "JWT",
            "description": "The identity provider's JWT (AUTH_MODE=jwt), or a guest token from "
            "POST /api/v1/auth/guest (when ALLOW_ANONYMOUS=true)",
        }
    }
    if settings.auth_mode == "dev":
        schemes["callerId"] = {
            "type": "apiKey",
            "in": "header",
            "name": "X-Caller-Id",
            "description": "AUTH_MODE=dev only: the caller, any id up to 128 characters",
        }
        schemes["callerRoles"] = {
            "type": "apiKey",
            "in": "header",
            "name": "X-Caller-Roles",
            "description": "AUTH_MODE=dev only: the caller's roles, comma-separated (default user)",
        }
        schemes["callerClaims"] = {
            "type": "apiKey",
            "in": "header",
            "name": "X-Caller-Claims",
            "description": "AUTH_MODE=dev only: the caller's token claims as a JSON object, where pinned "
            "tool parameters come from (docs/tools.md)",
        }
    return schemes


def _security(route: RouteContext, settings: Settings) -> list[dict[str, list[str]]]:
    calls = {part.call for part in _walk(route.dependant)}
    if not _has_caller(calls):
        return []
    alternatives: list[dict[str, list[str]]] = [{"bearer": []}]
    if settings.auth_mode == "dev":
        alternatives += [
            {"callerId": [], "callerRoles": [], "callerClaims": []},
            {"callerId": [], "callerRoles": []},
            {"callerId": []},
        ]
    if settings.allow_anonymous and not {auth.get_owner, auth.get_asker} & calls:
        alternatives.append({})  # no credentials: the anonymous caller
    return alternatives
