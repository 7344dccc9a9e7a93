"""Serve a declared route (api/routing.py) on Starlette alone, reading its inputs as FastAPI does.

Each route's plan is made once, when the app is built: where each parameter comes from and the
pydantic validator that checks it. A request then goes as in FastAPI: the body is read and, when sent
as JSON, parsed (unparseable JSON fails at once); the dependencies run in order, each once (plain
functions in the thread pool, as FastAPI runs them, in one trip for all of them); the path,
query and header parameters and the body are validated, every error collected; then the endpoint.
Input errors raise `InvalidInput` with FastAPI's error list, so api/errors.py answers them exactly
as it answers FastAPI's own (a route of `bad_request` raises 400 or 415 itself, as the query routes do).
"""

from __future__ import annotations

import functools
import inspect
import json
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, Field, TypeAdapter, ValidationError
from starlette.background import BackgroundTasks
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from rag_orchestrator.api.errors import InvalidInput, validation_failure
from rag_orchestrator.api.routing import REQUIRED, Dependency, Param, RouteSpec
from rag_orchestrator.errors import BadRequest, UnsupportedMediaType

_ABSENT: Any = object()
_CHECKED_IN_ORDER = ("path", "query", "header", "body")
# Keyword arguments of FastAPI's parameters that say nothing about the value's validity.
_DOCUMENTATION = {"description", "title", "examples", "deprecated", "include_in_schema", "alias"}


@dataclass(frozen=True)
class _Input:
    """One parameter of the endpoint: its name, where it comes from, and how it is checked."""

    name: str
    source: str  # "request", "background", "depends", "path", "query", "header", "body"
    key: str = ""  # the path, query or header name
    default: Any = REQUIRED
    adapter: TypeAdapter[Any] | None = None
    call: Callable[..., Any] | None = None
    asynchronous: bool = False  # a dependency that is a coroutine function


class SpecRoute(Route):
    """A Starlette route serving a declared route; `spec` is its declaration, for the document."""

    def __init__(self, spec: RouteSpec) -> None:
        self.spec = spec
        self.inputs = _plan(spec.endpoint)  # every validator built now, none on the first request
        include = spec.options.get("include_in_schema", True)
        super().__init__(
            spec.path, _handler(spec, self.inputs), methods=[spec.method], include_in_schema=include
        )
        self.methods = {spec.method}  # no HEAD beside GET (Starlette's default): as FastAPI, and the document


def routes(declared: list[RouteSpec]) -> list[SpecRoute]:
    return [SpecRoute(spec) for spec in declared]


def _handler(spec: RouteSpec, inputs: list[_Input]) -> Callable[[Request], Awaitable[Response]]:
    wants_body = any(item.source == "body" for item in inputs)
    asynchronous = _is_async(spec.endpoint)
    respond = _responder(spec)

    async def handle(request: Request) -> Response:
        try:
            body = await _read_body(request) if wants_body else _ABSENT
            values, background = await _values(inputs, request, body)
        except InvalidInput as invalid:
            if not spec.bad_request:
                raise
            status, message = validation_failure(request, invalid.errors(), invalid.body)
            raise (UnsupportedMediaType if status == 415 else BadRequest)(message) from None
        if asynchronous:
            result = await spec.endpoint(**values)
        else:  # as FastAPI runs a plain function: in the thread pool
            result = await run_in_threadpool(spec.endpoint, **values)
        response = respond(result)
        if background is not None and response.background is None:
            response.background = background
        return response

    return handle


def _plan(endpoint: Callable[..., Any]) -> list[_Input]:
    """The endpoint's inputs; the checked ones in the order FastAPI checks them (stable otherwise)."""
    hints = typing.get_type_hints(endpoint)
    inputs = [
        _input(name, hints.get(name, Any), p.default)
        for name, p in inspect.signature(endpoint).parameters.items()
    ]
    order = {source: rank for rank, source in enumerate(_CHECKED_IN_ORDER)}
    return sorted(inputs, key=lambda item: order.get(item.source, -1))


def _input(name: str, annotation: Any, default: Any) -> _Input:
    if isinstance(annotation, type) and issubclass(annotation, Request):
        return _Input(name, "request")
    if annotation is BackgroundTasks:
        return _Input(name, "background")
    if isinstance(default, Dependency):
        return _Input(name, "depends", call=default.call, asynchronous=_is_async(default.call))
    if isinstance(default, Param):
        key = default.constraints.get("alias") or (
            name.replace("_", "-") if default.source == "header" else name
        )
        return _Input(name, default.source, key, default.default, _adapter(annotation, default.constraints))
    if (
        default is inspect.Parameter.empty
        and isinstance(annotation, type)
        and issubclass(annotation, BaseModel)
    ):
        return _Input(name, "body", name, REQUIRED, TypeAdapter(annotation))
    raise TypeError(f"{name}: declare where it comes from (Path, Query, Header, Body or Depends)")


def _adapter(annotation: Any, constraints: dict[str, Any]) -> TypeAdapter[Any]:
    checks = {key: value for key, value in constraints.items() if key not in _DOCUMENTATION}
    return TypeAdapter(Annotated[annotation, Field(**checks)] if checks else annotation)


async def _read_body(request: Request) -> Any:
    """The body as FastAPI reads it: parsed JSON when sent as JSON, else its bytes; absent when empty."""
    raw = await request.body()
    if not raw:
        return _ABSENT
    kind = (request.headers.get("content-type") or "").split(";", 1)[0].strip().lower()
    major, _, minor = kind.partition("/")
    if major != "application" or not (minor == "json" or minor.endswith("+json")):
        return raw
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        error = {"type": "json_invalid", "loc": ("body", exc.pos), "msg": "JSON decode error", "input": {}}
        raise InvalidInput([error], exc.doc) from None
    except (ValueError, RecursionError):  # not UTF-8; nested deeper than the parser goes (~1,000 levels)
        raise HTTPException(400, "There was an error parsing the body") from None


async def _values(
    inputs: list[_Input], request: Request, body: Any
) -> tuple[dict[str, Any], BackgroundTasks | None]:
    values: dict[str, Any] = {}
    background: BackgroundTasks | None = None
    # Dependencies first, in order. A plain function may wait on I/O (the caller's JWKS fetch, a secret
    # from SSM): as FastAPI, they run in the thread pool, all in one trip; then the coroutines.
    waiting = [item for item in inputs if item.source == "depends" and not item.asynchronous]
    if waiting:
        values.update(await run_in_threadpool(_solve, waiting, request))
    for item in inputs:
        if item.source == "depends" and item.asynchronous:
            values[item.name] = await item.call(request)  # type: ignore[misc]
        elif item.source == "request":
            values[item.name] = request
        elif item.source == "background":
            values[item.name] = background = BackgroundTasks()
    errors: list[dict[str, Any]] = []
    for item in inputs:  # planned in FastAPI's order: path, query, header, body (its error list's)
        if item.source in _CHECKED_IN_ORDER:
            values[item.name] = _checked(item, _received(item, request, body), errors)
    if errors:
        raise InvalidInput(errors, None if body is _ABSENT else body)
    return values, background


def _is_async(call: Any) -> bool:
    """A coroutine function, or an object whose `__call__` is one (FastAPI's test too)."""
    if inspect.isroutine(call):
        return inspect.iscoroutinefunction(call)
    return inspect.iscoroutinefunction(type(call).__call__)


def _solve(waiting: list[_Input], request: Request) -> dict[str, Any]:
    return {item.name: item.call(request) for item in waiting if item.call is not None}


def _received(item: _Input, request: Request, body: Any) -> Any:
    if item.source == "body":
        return body
    found = {"path": request.path_params, "query": request.query_params, "header": request.headers}
    value = found[item.source].get(item.key)
    return _ABSENT if value is None else value


def _checked(item: _Input, value: Any, errors: list[dict[str, Any]]) -> Any:
    loc: tuple[Any, ...] = ("body",) if item.source == "body" else (item.source, item.key)
    if value is _ABSENT:
        if item.default is REQUIRED:
            errors.append({"type": "missing", "loc": loc, "msg": "Field required", "input": None})
        return None if item.default is REQUIRED else item.default
    assert item.adapter is not None
    try:
        return item.adapter.validate_python(value, from_attributes=True)
    except ValidationError as exc:
        errors.extend({**error, "loc": (*loc, *error["loc"])} for error in exc.errors())
        return None


def _responder(spec: RouteSpec) -> Callable[[Any], Response]:
    """What turns an endpoint's result into the response: a Response as it is; anything else as JSON
    of the route's response model (by alias, as FastAPI serializes), with the route's status. The
    model's own instance dumps itself; a validator for anything else is made on first need, not at
    start-up."""
    model = spec.response_model
    status = spec.status_code

    @functools.cache
    def adapter() -> TypeAdapter[Any]:
        return TypeAdapter(model)

    def respond(result: Any) -> Response:
        if isinstance(result, Response):
            return result
        if isinstance(result, BaseModel) and (model is None or type(result) is model):
            content = result.model_dump(mode="json", by_alias=True)
        elif model is None:
            content = result
        else:
            raw = result.model_dump(by_alias=True) if isinstance(result, BaseModel) else result
            content = adapter().dump_python(
                adapter().validate_python(raw, from_attributes=True), mode="json", by_alias=True
            )
        return JSONResponse(content, status_code=status)

    return respond
