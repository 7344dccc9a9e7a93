"""The tools a process offers: rag_search, the catalogue's HTTP tools and the tools of MCP_SERVERS, their
registry and selection."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx

from rag_orchestrator.aws import OBJECTS, AwsClients
from rag_orchestrator.config import Settings
from rag_orchestrator.domain.callers import may_use_tools
from rag_orchestrator.observability import logger
from rag_orchestrator.retrieval.embedders import Embedder
from rag_orchestrator.ssm_params import SecretReader
from rag_orchestrator.tools.assertion import create_signer, require_key
from rag_orchestrator.tools.base import AttachmentLinks, SearchTool, Tool
from rag_orchestrator.tools.caller_assertions import CallerAssertions
from rag_orchestrator.tools.catalog import Catalog, Lookup, environment_secrets, load_catalog
from rag_orchestrator.tools.http_tool import ClientPool, HttpTool
from rag_orchestrator.tools.rag_search import NAME as RAG_SEARCH
from rag_orchestrator.tools.registry import ToolRegistry
from rag_orchestrator.tools.selection import Offer, ToolSelector

if TYPE_CHECKING:  # built only when MCP_SERVERS names a server
    from rag_orchestrator.tools.mcp_endpoint import McpEndpoint
    from rag_orchestrator.tools.mcp_servers import McpServer
    from rag_orchestrator.tools.mcp_toolset import McpTools

_DEFAULT: Any = object()


@dataclass
class Toolbox:
    catalog: Catalog
    registry: ToolRegistry
    selector: ToolSelector
    search: SearchTool  # rag_search, also called by the loop before the first model call
    mcp: McpTools | None = None  # the tools of MCP_SERVERS, when it names any

    def preview_type(self, name: str) -> str | None:
        return getattr(self.registry.get(name), "preview", None)

    async def listing(self, roles: tuple[str, ...]) -> list[dict[str, Any]]:
        """The tools these roles may use, in any context (GET /api/v1/agent/tools); MCP servers'
        tools as listed now (the first listing of a process lists them)."""
        if may_use_tools(roles):
            await self.selector.refresh()
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


def _cache(settings: Settings, aws: AwsClients | None) -> Any:
    if not (settings.tool_index_cache and settings.transcripts_bucket and aws is not None):
        return None
    from rag_orchestrator.tools.index_cache import S3VectorCache

    return S3VectorCache(settings.transcripts_bucket, aws.lazy(OBJECTS))


def build_toolbox(
    settings: Settings,
    *,
    rag_search: SearchTool,
    embedder: Embedder | None,
    transport: httpx.AsyncBaseTransport | None = None,
    lookup: Lookup | None = None,
    cache: Any = _DEFAULT,
    attachment_links: AttachmentLinks | None = None,
    assertions: CallerAssertions | None = None,
    aws: AwsClients | None = None,
    secrets: SecretReader | None = None,
) -> Toolbox:
    """Load and validate the catalogue and MCP_SERVERS (ConfigError on any problem) and wire their
    tools; MCP servers are listed when first used, not here. `aws` reads a catalogue or MCP_SERVERS in
    S3 or SSM and keeps the tool index in S3 (TOOL_INDEX_CACHE); `secrets` reads the secrets the
    catalogue (unless `lookup` is given), the servers' headers and the assertion key name; `assertions`
    signs the caller assertions of both (the composition root's; one of these settings' own if not given)."""
    lookup = lookup or environment_secrets(secrets)
    catalog = load_catalog(settings, lookup, aws)
    servers = _servers(settings, aws)
    pool = ClientPool(transport)
    identities = [spec.http.identity for spec in catalog.tools] + [server.identity for server in servers]
    if "assertion" in identities:
        require_key(settings)
    assertions = assertions or create_signer(settings, secrets)
    http_tools = [
        HttpTool(
            spec,
            pool=pool,
            lookup=lookup,
            default_timeout=settings.tool_timeout_seconds,
            max_response_bytes=settings.tool_response_max_bytes,
            links=attachment_links,
            assertions=assertions,
        )
        for spec in catalog.tools
    ]
    fixed: list[Tool] = [rag_search, *http_tools]
    mcp = (
        _mcp_tools(settings, _endpoints(settings, servers, assertions, secrets), embedder, fixed)
        if servers
        else None
    )
    # A tool's own timeoutSeconds may exceed TOOL_TIMEOUT_SECONDS; the registry's bound must not cut it.
    own = [tool.timeout_seconds for tool in http_tools] + [
        e.timeout_seconds for e in (mcp.endpoints if mcp else ())
    ]
    timeout = max([settings.tool_timeout_seconds, *(seconds + 1 for seconds in own)])
    registry = ToolRegistry(fixed, timeout_seconds=timeout, more=mcp)
    selector = ToolSelector(
        offers(catalog),
        embedder=embedder,
        top_k=settings.tool_selection_top_k,
        min_score=settings.tool_selection_min_score,
        cache=_cache(settings, aws) if cache is _DEFAULT else cache,
        more=mcp,
    )
    return Toolbox(catalog=catalog, registry=registry, selector=selector, search=rag_search, mcp=mcp)


def _servers(settings: Settings, aws: AwsClients | None) -> tuple[McpServer, ...]:
    """MCP_SERVERS' servers, validated; their module is not even imported without them."""
    if not settings.mcp_servers:
        return ()
    from rag_orchestrator.tools.mcp_servers import load_servers

    return load_servers(settings, aws)


def _endpoints(
    settings: Settings,
    servers: tuple[McpServer, ...],
    assertions: CallerAssertions | None,
    secrets: SecretReader | None,
) -> list[McpEndpoint]:
    from rag_orchestrator.tools.mcp_endpoint import McpEndpoint
    from rag_orchestrator.tools.mcp_exchange import lazy_client

    client = lazy_client(settings.tool_response_max_bytes)
    return [
        McpEndpoint(
            server,
            client,
            default_timeout=settings.tool_timeout_seconds,
            assertions=assertions,
            secrets=secrets,
        )
        for server in servers
    ]


def _mcp_tools(
    settings: Settings, endpoints: list[McpEndpoint], embedder: Embedder | None, fixed: list[Tool]
) -> McpTools:
    from rag_orchestrator.tools.mcp_toolset import McpTools

    return McpTools(
        endpoints,
        ttl_seconds=settings.mcp_tools_ttl_seconds,
        embedder=embedder,
        taken=[tool.name for tool in fixed],
    )
