"""FastAPI's route for a declared one (api/routing.py), made to document it.

The route is served by api/endpoints.py in every app; FastAPI sees it only here, when an OpenAPI
document is built (never at start-up). Its endpoint's parameters become FastAPI's own `Path`, `Query`,
`Header`, `Body` and `Depends` with the same constraints and callables, so FastAPI documents it as it
would a route of its own, and api/openapi.py describes it from the same dependencies.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Coroutine, Iterable
from typing import Any

import fastapi
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute

from rag_orchestrator.api.endpoints import SpecRoute
from rag_orchestrator.api.errors import validation_failure
from rag_orchestrator.api.routing import Dependency, Param, RouteSpec
from rag_orchestrator.errors import BadRequest, UnsupportedMediaType

_PARAMS: dict[str, Callable[..., Any]] = {
    "path": fastapi.Path,
    "query": fastapi.Query,
    "header": fastapi.Header,
    "body": fastapi.Body,
}


class BadRequestRoute(APIRoute):
    """A declared route whose every input error answers 400, a body not sent as JSON still 415
    (`Router(bad_request=True)`, the query routes'); the document tells them by this class."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def route(request: Request) -> Response:
            try:
                return await handler(request)
            except RequestValidationError as exc:
                status, message = validation_failure(request, exc.errors(), exc.body)
                raise (UnsupportedMediaType if status == 415 else BadRequest)(message) from None

        return route


def documented(routes: Iterable[BaseRoute]) -> list[BaseRoute]:
    """The app's routes, each declared one as FastAPI's, in the same order."""
    return [api_route(route.spec) if isinstance(route, SpecRoute) else route for route in routes]


@functools.cache
def api_route(spec: RouteSpec) -> APIRoute:
    route_class = BadRequestRoute if spec.bad_request else APIRoute
    return route_class(spec.path, _endpoint(spec.endpoint), methods=[spec.method], **spec.options)


def _endpoint(endpoint: Callable[..., Any]) -> Callable[..., Any]:
    """The endpoint, with a signature FastAPI reads (its name and docstring kept). The apps never let
    FastAPI serve it; the tests do, to show endpoints.py reads every input as FastAPI would."""
    hints = typing.get_type_hints(endpoint)
    signature = inspect.signature(endpoint)
    parameters = [
        parameter.replace(
            annotation=hints.get(name, parameter.annotation), default=_fastapi(parameter.default)
        )
        for name, parameter in signature.parameters.items()
    ]

    async def stand_in(*args: Any, **kwargs: Any) -> Any:
        result = endpoint(*args, **kwargs)
        return await result if inspect.isawaitable(result) else result

    functools.update_wrapper(stand_in, endpoint)
    stand_in.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=parameters, return_annotation=hints.get("return", signature.return_annotation)
    )
    return stand_in


def _fastapi(default: Any) -> Any:
    if isinstance(default, Dependency):
        return fastapi.Depends(default.call)
    if isinstance(default, Param):
        return _PARAMS[default.source](default.default, **default.constraints)
    return default
