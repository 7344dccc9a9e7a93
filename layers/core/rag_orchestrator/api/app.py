"""create_app(): one FastAPI app from the routers a function serves, with the error JSON of docs/errors.md."""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import Any

from fastapi import FastAPI

from rag_orchestrator import __version__
from rag_orchestrator.api.deps import Services
from rag_orchestrator.api.docs_page import install_docs
from rag_orchestrator.api.errors import install_error_handlers
from rag_orchestrator.api.middleware import (
    BodySizeLimitMiddleware,
    MetricsFlushMiddleware,
    RequestContextMiddleware,
)
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


def create_app(
    routers: Iterable[str] = ALL_ROUTERS, settings: Settings | None = None, aws: AwsClients | None = None
) -> FastAPI:
    """Build the app and its services (on `aws`, else the process's AWS clients); settings are
    validated here, so a bad setting stops start-up."""
    services = Services(settings or load_settings(), aws)
    app = FastAPI(
        title="RAG Orchestrator",
        version=__version__,
        description="Serverless RAG chat backend: conversations, streamed agentic turns, retrieval, answers.",
        docs_url=None,  # FastAPI's own /docs and /redoc load their files from a CDN: ours does not
        redoc_url=None,
    )
    install_docs(app)
    app.state.services = services
    for name in routers:
        module_name, _, attribute = ROUTERS[name].partition(":")
        module = importlib.import_module(module_name)
        if hasattr(module, "check"):  # a router's own start-up checks (a template file, the catalogue)
            module.check(services)
        app.include_router(getattr(module, attribute))
    install_error_handlers(app)
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    app.add_middleware(BodySizeLimitMiddleware, max_bytes=services.settings.max_request_bytes)
    app.add_middleware(MetricsFlushMiddleware)
    app.add_middleware(RequestContextMiddleware)
    return app


def _openapi(app: FastAPI) -> dict[str, Any]:
    """Imported on the first request for /openapi.json or /docs, not at cold start."""
    from rag_orchestrator.api.openapi import document

    return document(app, app.state.services.settings)
