"""How a route module declares its routes without FastAPI (docs/api.md, "One declaration, two apps").

A `Router` records each route once: its method and path, its endpoint, and what the OpenAPI document
says of it. The endpoint's parameters say where each value comes from, as in FastAPI: `Path`, `Query`,
`Header` and `Body` with their constraints, `Depends(f)` for what `f(request)` returns, a Starlette
`Request`, and a pydantic model for the JSON body. From that one declaration:

- `api/endpoints.py` serves the route on Starlette alone: the streaming function's whole app, and these
  routes inside the API's FastAPI app, so every app runs the same code for them;
- `api/openapi_routes.py` hands FastAPI the same route to document, only when a document is asked for.

Importing this module imports nothing beyond the standard library: the streaming function starts
without FastAPI, whose import is most of a cold start's CPU (bench/README.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

REQUIRED: Any = ...  # a parameter with no default, as FastAPI spells it


@dataclass(frozen=True)
class Param:
    """Where a parameter comes from ("path", "query", "header" or "body"), its default and constraints."""

    source: str
    default: Any
    constraints: dict[str, Any]

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


def Path(default: Any = REQUIRED, **constraints: Any) -> Any:
    return Param("path", default, constraints)


def Query(default: Any = None, **constraints: Any) -> Any:
    return Param("query", default, constraints)


def Header(default: Any = None, **constraints: Any) -> Any:
    """A header, named as the parameter with `-` for `_` (`last_event_id`: `Last-Event-ID`)."""
    return Param("header", default, constraints)


def Body(default: Any = REQUIRED, **constraints: Any) -> Any:
    return Param("body", default, constraints)


@dataclass(frozen=True)
class Dependency:
    """A value the endpoint gets from `call(request)`, once per request."""

    call: Callable[..., Any]


def Depends(call: Callable[..., Any]) -> Any:
    return Dependency(call)


@dataclass(frozen=True, eq=False)
class RouteSpec:
    """One route: `options` are what FastAPI's route takes for the document (summary, responses,
    response_model, status_code, response_class, include_in_schema, tags)."""

    method: str
    path: str
    endpoint: Callable[..., Any]
    options: dict[str, Any]
    bad_request: bool  # every input error answers 400, not 422 (the query routes')

    @property
    def status_code(self) -> int:
        return int(self.options.get("status_code") or 200)

    @property
    def response_model(self) -> Any:
        return self.options.get("response_model")


@dataclass
class Router:
    """Routes under one prefix and tags. `bad_request`: input errors are 400s (a body not sent as
    JSON still 415), as the query routes answer."""

    prefix: str = ""
    tags: list[str] = field(default_factory=list)
    bad_request: bool = False
    routes: list[RouteSpec] = field(default_factory=list)

    def get(self, path: str, **options: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        return self._route("GET", path, options)

    def post(self, path: str, **options: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        return self._route("POST", path, options)

    def _route(
        self, method: str, path: str, options: dict[str, Any]
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def record(endpoint: Callable[..., Any]) -> Callable[..., Any]:
            documented = {"tags": list(self.tags), **options} if self.tags else options
            self.routes.append(RouteSpec(method, self.prefix + path, endpoint, documented, self.bad_request))
            return endpoint

        return record
