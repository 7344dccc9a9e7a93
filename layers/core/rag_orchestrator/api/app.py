"""create_app(): one FastAPI app from the routers a function serves, with DESIGN.md's error JSON."""

from __future__ import annotations

import importlib
from collections.abc import Iterable

from fastapi import FastAPI

from rag_orchestrator import __version__
from rag_orchestrator.api.errors import install_error_handlers
from rag_orchestrator.api.middleware import BodySizeLimitMiddleware, RequestContextMiddleware
from rag_orchestrator.config import get_settings

# Router name -> "module:attribute". Imported only when a function serves it, so a function
# pays at cold start only for the routers it mounts.
ROUTERS: dict[str, str] = {
    "health": "rag_orchestrator.api.health:router",
}

API_ROUTERS = ("health",)
STREAM_ROUTERS = ("health",)
ALL_ROUTERS = tuple(ROUTERS)


def create_app(routers: Iterable[str] = ALL_ROUTERS) -> FastAPI:
    """Build the app; settings are validated here, so a bad setting stops start-up."""
    settings = get_settings()
    app = FastAPI(
        title="RAG Orchestrator",
        version=__version__,
        description="Serverless RAG chat backend: conversations, streamed agentic turns, retrieval, answers.",
    )
    for name in routers:
        module_name, _, attribute = ROUTERS[name].partition(":")
        app.include_router(getattr(importlib.import_module(module_name), attribute))
    install_error_handlers(app)
    app.add_middleware(BodySizeLimitMiddleware, max_bytes=settings.max_request_bytes)
    app.add_middleware(RequestContextMiddleware)
    return app
