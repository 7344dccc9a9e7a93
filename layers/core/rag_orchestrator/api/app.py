"""create_app(): one app from the routers a function serves, with the error JSON of docs/errors.md.

A router declared with api/routing.py is served by api/endpoints.py on Starlette; the others are
FastAPI's. An app of declared routers only (the streaming function's) is a Starlette app and never
imports FastAPI; an app with any FastAPI router is a FastAPI app serving both kinds. Either serves
/openapi.json (built from both kinds, on its first request) and /docs.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import Any

from starlette.applications import Starlette

from rag_orchestrator.api.deps import Services
from rag_orchestrator.api.docs_page import TITLE, install_docs
from rag_orchestrator.api.endpoints import routes
from rag_orchestrator.api.errors import install_error_handlers
from rag_orchestrator.api.middleware import (
    BodySizeLimitMiddleware,
    MetricsFlushMiddleware,
    RequestContextMiddleware,
)
from rag_orchestrator.api.routing import Router
from rag_orchestrator.aws import AwsClients
from rag_orchestrator.config import Settings, load_settings

# Router name -> "module:attribute". Imported only when a function serves it, so a function
# pays at cold start only for the routers it mounts.
ROUTERS: dict[str, str] = {
    "health": "rag_orchestrator.api.health:router",
    "conversations": "rag_orchestrator.api.conversations:router",
    "feedback": "rag_orchestrator.api.feedback:router",
    "attachments": "rag_orchestrator.api.attachments:router",
    "ingest": "rag_orchestrator.api.ingest:router",
    "query": "rag_orchestrator.api.query:router",
    "chat": "rag_orchestrator.api.chat:router",
    "chat_stream": "rag_orchestrator.api.chat:stream_router",
    "ui_stream": "rag_orchestrator.api.ui_stream:router",
    "agent_chat": "rag_orchestrator.api.agent_chat:router",
    "revisions": "rag_orchestrator.api.revisions:stream_router",
    "turns": "rag_orchestrator.api.stream_control:router",
    "turn_events": "rag_orchestrator.api.stream_control:stream_router",
    "approvals": "rag_orchestrator.api.approvals:stream_router",
    "usage": "rag_orchestrator.api.usage:router",
    # "answer" before "answer_stream": where both are mounted, the REST route owns /query/answer.
    "answer": "rag_orchestrator.api.answers:router",
    "answer_stream": "rag_orchestrator.api.answers:stream_router",
    "tools": "rag_orchestrator.api.tools:router",
    "guest": "rag_orchestrator.api.guest:router",
    "jwks": "rag_orchestrator.api.jwks:router",
    "audit": "rag_orchestrator.api.audit:router",
    "documents": "rag_orchestrator.api.documents:router",
    "memory": "rag_orchestrator.api.memory:router",
    "mcp": "rag_orchestrator.api.mcp:router",
    "lifecycle": "rag_orchestrator.api.lifecycle:router",
    "shares": "rag_orchestrator.api.shares:router",
}

API_ROUTERS = (
    "health",
    "conversations",
    "feedback",
    "attachments",
    "ingest",
    "query",
    "chat",
    "turns",
    "answer",
    "tools",
    "guest",
    "jwks",
    "audit",
    "documents",
    "usage",
    "memory",
    "mcp",
    "lifecycle",
    "shares",
)
STREAM_ROUTERS = (
    "health",
    "chat_stream",
    "ui_stream",
    "agent_chat",
    "revisions",
    "turns",
    "turn_events",
    "approvals",
    "answer_stream",
)
ALL_ROUTERS = tuple(ROUTERS)


class StreamApp(Starlette):
    """An app of declared routers only, on Starlette: `openapi()` as a FastAPI app has it."""

    def openapi(self) -> dict[str, Any]:
        return _openapi(self)


def create_app(
    routers: Iterable[str] = ALL_ROUTERS, settings: Settings | None = None, aws: AwsClients | None = None
) -> Starlette:
    """Build the app and its services (on `aws`, else the process's AWS clients); settings are
    validated here, so a bad setting stops start-up."""
    services = Services(settings or load_settings(), aws)
    routers = list(routers)
    if not set(routers) <= set(STREAM_ROUTERS):  # FastAPI's routers among them: built as they import
        from rag_orchestrator.api.fastapi_v1 import skip_v1_import

        skip_v1_import()
    mounted = []
    for name in routers:
        module_name, _, attribute = ROUTERS[name].partition(":")
        module = importlib.import_module(module_name)
        if hasattr(module, "check"):  # a router's own start-up checks (a template file, the catalogue)
            module.check(services)
        mounted.append(getattr(module, attribute))
    app = _app(mounted)
    app.state.services = services
    install_docs(app, TITLE, lambda: _openapi(app))
    for router in mounted:
        mount(app, router)
    app.add_middleware(BodySizeLimitMiddleware, max_bytes=services.settings.max_request_bytes)
    app.add_middleware(MetricsFlushMiddleware)
    app.add_middleware(RequestContextMiddleware)
    return app


def mount(app: Starlette, router: Any) -> None:
    """Serve a router's routes after the app's others: a declared one's on Starlette, FastAPI's by FastAPI."""
    if isinstance(router, Router):
        app.router.routes.extend(routes(router.routes))
    else:
        app.include_router(router)  # type: ignore[attr-defined]


def _app(mounted: list[Any]) -> Starlette:
    """A StreamApp when every router is declared (no FastAPI imported), else a FastAPI app."""
    if all(isinstance(router, Router) for router in mounted):
        app: Starlette = StreamApp()
        install_error_handlers(app)
        return app
    from fastapi import FastAPI
    from fastapi.exceptions import RequestValidationError

    from rag_orchestrator import __version__

    app = FastAPI(title=TITLE, version=__version__, docs_url=None, redoc_url=None, openapi_url=None)
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    install_error_handlers(app, RequestValidationError)
    return app


def _openapi(app: Starlette) -> dict[str, Any]:
    """Imported on the first request for /openapi.json or /docs, not at cold start."""
    from rag_orchestrator.api.openapi import document

    return document(app, app.state.services.settings)
