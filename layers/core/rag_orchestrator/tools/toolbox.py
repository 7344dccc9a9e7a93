"""The tools a process offers: rag_search and the catalogue's HTTP tools, their registry and selection."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from rag_orchestrator.config import Settings
from rag_orchestrator.observability import logger
from rag_orchestrator.retrieval.embedders import Embedder
from rag_orchestrator.tools.base import AttachmentLinks, SearchTool
from rag_orchestrator.tools.catalog import Catalog, Lookup, environment_secret, load_catalog
from rag_orchestrator.tools.http_tool import ClientPool, HttpTool
from rag_orchestrator.tools.rag_search import NAME as RAG_SEARCH
from rag_orchestrator.tools.registry import ToolRegistry
from rag_orchestrator.tools.selection import Offer, ToolSelector

_DEFAULT: Any = object()


@dataclass
class Toolbox:
    catalog: Catalog
    registry: ToolRegistry
    selector: ToolSelector
    search: SearchTool  # rag_search, also called by the loop before the first model call

    def preview_type(self, name: str) -> str | None:
        return getattr(self.registry.get(name), "preview", None)

    def listing(self, roles: tuple[str, ...]) -> list[dict[str, Any]]:
        """The tools these roles may use, in any context (GET /api/v1/agent/tools)."""
        listed = []
        for offer in self.selector.visible(roles):
            tool = self.registry.get(offer.name)
            if tool is None:
                continue
            listed.append(
                {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                    "contexts": list(offer.contexts) if offer.contexts is not None else None,
                    "core": offer.core,
                    "preview": self.preview_type(offer.name),
                    "approval": "required" if getattr(tool, "approval_required", False) else None,
                }
            )
        return listed


def offers(catalog: Catalog) -> list[Offer]:
    """rag_search, forced into every context for the roles ragSearch allows, then the catalogue's tools."""
    return [
        Offer(RAG_SEARCH, "", contexts=None, core=True, roles=catalog.rag_search.roles),
        *(Offer(s.name, s.embed_text(), s.contexts, s.core, s.roles) for s in catalog.tools),
    ]


def selection_embedder(make: Callable[[], Embedder]) -> Embedder | None:
    """The embedder `make` builds, or None (selection degrades to the context filter) when it cannot."""
    try:
        return make()
    except Exception as exc:
        logger.warning("no embedder for tool selection", extra={"error_type": type(exc).__name__})
        return None


def _cache(settings: Settings) -> Any:
    if not (settings.tool_index_cache and settings.transcripts_bucket):
        return None
    from rag_orchestrator.tools.index_cache import S3VectorCache

    return S3VectorCache(settings.transcripts_bucket)


def build_toolbox(
    settings: Settings,
    *,
    rag_search: SearchTool,
    embedder: Embedder | None,
    transport: httpx.AsyncBaseTransport | None = None,
    lookup: Lookup = environment_secret,
    cache: Any = _DEFAULT,
    attachment_links: AttachmentLinks | None = None,
) -> Toolbox:
    """Load and validate the catalogue (ConfigError on any problem) and wire its tools."""
    catalog = load_catalog(settings, lookup)
    pool = ClientPool(transport)
    http_tools = [
        HttpTool(
            spec,
            pool=pool,
            lookup=lookup,
            default_timeout=settings.tool_timeout_seconds,
            max_response_bytes=settings.tool_response_max_bytes,
            links=attachment_links,
        )
        for spec in catalog.tools
    ]
    # A tool's own timeoutSeconds may exceed TOOL_TIMEOUT_SECONDS; the registry's bound must not cut it.
    timeout = max([settings.tool_timeout_seconds, *(tool.timeout_seconds + 1 for tool in http_tools)])
    registry = ToolRegistry([rag_search, *http_tools], timeout_seconds=timeout)
    selector = ToolSelector(
        offers(catalog),
        embedder=embedder,
        top_k=settings.tool_selection_top_k,
        min_score=settings.tool_selection_min_score,
        cache=_cache(settings) if cache is _DEFAULT else cache,
    )
    return Toolbox(catalog=catalog, registry=registry, selector=selector, search=rag_search)
