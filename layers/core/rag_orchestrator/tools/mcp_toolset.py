"""The tools of MCP_SERVERS as a process knows them: listed at first use, kept MCP_TOOLS_TTL_SECONDS.

`refresh()` (tool selection awaits it each turn; it returns at once while every listing is fresh)
lists the servers whose listing expired, all at once. Each listed tool is checked: a name that would
not be a valid function name as `<server>__<tool>` (64 characters of [a-zA-Z0-9_-]), a name listed
twice or taken by another tool, a schema that is not a JSON Schema of an object — each is skipped
with a warning, and the rest of the server's tools are kept. A server that cannot be listed (down,
refusing, answering nonsense) has no tools until it is listed again, after `retry_seconds` or the
TTL, whichever is shorter: a warning, never a failed turn. The embed texts of a listing are embedded
once, when it changes, not per turn; the vectors go to tool selection beside the catalogue's.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rag_orchestrator.observability import logger
from rag_orchestrator.retrieval.embedders import Embedder
from rag_orchestrator.tools.mcp_endpoint import McpEndpoint
from rag_orchestrator.tools.mcp_exchange import ListedTool, McpCallFailed
from rag_orchestrator.tools.mcp_servers import TOOL_NAME
from rag_orchestrator.tools.mcp_tool import McpTool
from rag_orchestrator.tools.schema_check import plainly_valid
from rag_orchestrator.tools.selection import Offer, ToolIndex, index_key

RETRY_SECONDS = 30.0  # a server that could not be listed is tried again this soon (or at the TTL)


@dataclass
class _Listed:
    """What one server's last listing gave: its tools, their offers and vectors, and until when."""

    tools: dict[str, McpTool] = field(default_factory=dict)
    offers: tuple[Offer, ...] = ()
    vectors: dict[str, tuple[float, ...]] = field(default_factory=dict)
    key: str = ""  # identifies the embedded texts, so an unchanged listing is not embedded again
    expires: float = 0.0


class McpTools:
    def __init__(
        self,
        endpoints: Sequence[McpEndpoint],
        *,
        ttl_seconds: float,
        embedder: Embedder | None,
        taken: Collection[str] = (),
        retry_seconds: float = RETRY_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.endpoints = list(endpoints)
        self.ttl_seconds = ttl_seconds
        self.embedder = embedder
        self.retry_seconds = retry_seconds
        self._taken = frozenset(taken)  # the catalogue's names, which no MCP tool may shadow
        self.clock = clock  # monotonic seconds: when listings expire
        self._listed = {endpoint.server.name: _Listed() for endpoint in self.endpoints}
        self._pending: dict[str, asyncio.Task[None]] = {}
        self._tools: dict[str, McpTool] = {}
        self._offers: list[Offer] = []
        self._vectors: dict[str, tuple[float, ...]] = {}

    def get(self, name: str) -> McpTool | None:
        return self._tools.get(name)

    def tools(self) -> list[McpTool]:
        return list(self._tools.values())

    def offers(self) -> list[Offer]:
        return self._offers

    def vectors(self) -> Mapping[str, tuple[float, ...]]:
        return self._vectors

    async def refresh(self) -> None:
        """List every server whose listing expired; a listing already under way is awaited, not repeated."""
        now = self.clock()
        due = [e for e in self.endpoints if self._listed[e.server.name].expires <= now]
        if due:
            await asyncio.gather(*(asyncio.shield(self._listing(endpoint)) for endpoint in due))

    def _listing(self, endpoint: McpEndpoint) -> asyncio.Task[None]:
        name = endpoint.server.name
        task = self._pending.get(name)
        if task is None or task.done() or task.get_loop() is not asyncio.get_running_loop():
            task = self._pending[name] = asyncio.ensure_future(self._list(endpoint))
        return task

    async def _list(self, endpoint: McpEndpoint) -> None:
        server = endpoint.server.name
        started = time.perf_counter()
        try:
            listing = await endpoint.list_tools()
            tools = self._checked(endpoint, listing.tools)
        except Exception as exc:  # McpCallFailed says why; anything else is named by its type
            reason = exc.message if isinstance(exc, McpCallFailed) else type(exc).__name__
            logger.warning("mcp server left out", extra={"mcp_server": server, "reason": reason})
            self._listed[server] = _Listed(expires=self.clock() + min(self.retry_seconds, self.ttl_seconds))
            self._publish()
            return
        previous = self._listed[server]
        offers = tuple(
            Offer(t.name, t.embed_text(), endpoint.server.contexts, False, endpoint.server.roles)
            for t in tools
        )
        listed = _Listed({tool.name: tool for tool in tools}, offers, expires=self.clock() + self.ttl_seconds)
        listed.key, listed.vectors = await self._embedded(offers, previous)
        self._listed[server] = listed
        self._publish()
        logger.info(
            "mcp server listed",
            extra={
                "mcp_server": server,
                "tools": len(tools),
                "mode": endpoint.mode,
                "ms": round((time.perf_counter() - started) * 1000, 1),
            },
        )

    def _checked(self, endpoint: McpEndpoint, listed: Sequence[ListedTool]) -> list[McpTool]:
        """The listed tools the configuration keeps and the model can be offered; the others, warned of."""
        server = endpoint.server
        kept: dict[str, McpTool] = {}
        for item in listed:
            if not isinstance(item.name, str) or not server.keeps(item.name):
                continue
            name = server.tool_name(item.name)
            problem = _problem(name, item.input_schema)
            if problem is None and (name in kept or name in self._taken):
                problem = "its name is listed twice, or taken by another tool"
            if problem is not None:
                logger.warning(
                    "mcp tool skipped",
                    extra={"mcp_server": server.name, "tool": name[:100], "reason": problem},
                )
                continue
            kept[name] = McpTool(endpoint, item)
        return list(kept.values())

    async def _embedded(
        self, offers: Sequence[Offer], previous: _Listed
    ) -> tuple[str, dict[str, tuple[float, ...]]]:
        """The listing's vectors: the previous ones when its texts did not change, else embedded now.
        Without them (no embedder, or it failed) its tools are offered unranked."""
        if self.embedder is None or not offers:
            return "", {}
        key = index_key(offers, self.embedder.name)
        if key == previous.key:
            return key, previous.vectors
        try:
            index = await asyncio.to_thread(ToolIndex.build, self.embedder, offers)
        except Exception as exc:
            logger.warning(
                "mcp tools not embedded; offered unranked", extra={"error_type": type(exc).__name__}
            )
            return "", {}
        return key, index.vectors

    def _publish(self) -> None:
        """One view of every server's tools, swapped whole so a turn never sees half a listing."""
        listed = self._listed.values()
        self._tools = {name: tool for one in listed for name, tool in one.tools.items()}
        self._offers = [offer for one in listed for offer in one.offers]
        self._vectors = {name: vector for one in listed for name, vector in one.vectors.items()}


def _problem(name: str, schema: Any) -> str | None:
    """Why a listed tool cannot be offered, or None."""
    if not TOOL_NAME.match(name):
        return "its name is not 64 characters of a-z, A-Z, 0-9, _ and - with its server's prefix"
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return "its input schema is not a JSON Schema of an object"
    if plainly_valid(schema):  # jsonschema is not imported for a schema of plain typed properties
        return None
    from jsonschema import Draft202012Validator, SchemaError

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError:
        return "its input schema is not a valid JSON Schema"
    return None
