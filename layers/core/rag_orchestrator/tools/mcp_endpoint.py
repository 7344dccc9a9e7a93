"""One configured MCP server as the service reaches it: its headers, the caller's identity, its protocol.

Header values' secret references (`${ssm:/name}`, `${secretsmanager:name}`) are read through the
composition root's SecretReader (decrypted, cached five minutes) on each exchange, so the first use
reads them and a rotated secret is picked up. The caller's identity goes with each call, as
`identity` says (docs/mcp.md): `assertion` (X-Caller-Assertion, a JWT the service signs),
`caller-token` (the caller's own bearer token, AUTH_MODE=jwt; it replaces an `Authorization` of the
server's headers) or `none`, made as for HTTP tools (tools/caller_binding.py). A listing is the same
for every caller, so it carries the server's headers only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from rag_orchestrator.ssm_params import SecretReader
from rag_orchestrator.tools.base import ToolContext
from rag_orchestrator.tools.caller_assertions import CallerAssertions
from rag_orchestrator.tools.caller_binding import credentials, identity_headers, redact
from rag_orchestrator.tools.mcp_exchange import (
    AUTO,
    CallOutcome,
    Connection,
    Listing,
    McpCallFailed,
    McpExchanges,
)
from rag_orchestrator.tools.mcp_servers import SECRET_REF, McpServer, secret_reference

USER_AGENT = "rag-orchestrator-mcp/1"
LIST_TIMEOUT_SECONDS = 10.0  # a listing holds up the turn that asks for it first


class McpEndpoint:
    def __init__(
        self,
        server: McpServer,
        client: Callable[[], Awaitable[McpExchanges]],
        *,
        default_timeout: float,
        assertions: CallerAssertions | None = None,
        secrets: SecretReader | None = None,
    ) -> None:
        self.server = server
        self.timeout_seconds = server.timeout_seconds or default_timeout
        self.mode = AUTO  # until a listing says which protocol the server speaks
        self._client = client
        self._assertions = assertions
        self._secrets = secrets

    async def headers(self) -> tuple[dict[str, str], list[str]]:
        """The server's own headers with references read, and the values read; McpCallFailed when a
        secret cannot be read."""
        refs = {ref for value in self.server.headers.values() for ref in SECRET_REF.findall(value)}
        values: dict[str, str] = {}
        for ref in refs:
            try:
                if self._secrets is None:
                    raise LookupError("no AWS clients given")
                values[ref] = await asyncio.to_thread(self._secrets.read, secret_reference(ref))
            except Exception:  # missing, not readable by this function, or not a string
                raise McpCallFailed(f"The secret {ref} of its headers cannot be read") from None
            if "\r" in values[ref] or "\n" in values[ref]:
                raise McpCallFailed(f"The secret {ref} holds a line break, which no header may")
        resolved = {
            header: SECRET_REF.sub(lambda match: values[match.group(1)], value)
            for header, value in self.server.headers.items()
        }
        return {"User-Agent": USER_AGENT, **resolved}, list(values.values())

    async def list_tools(self) -> Listing:
        timeout = min(self.timeout_seconds, LIST_TIMEOUT_SECONDS)
        headers, _ = await self.headers()
        listing = await (await self._client()).list_tools(Connection(self.server.url, headers, timeout))
        self.mode = listing.mode
        return listing

    async def call_tool(
        self, name: str, arguments: dict[str, Any], ctx: ToolContext, tool: str, seconds: float
    ) -> CallOutcome:
        """Call the server's `name` for the caller of `ctx`; `tool` is the name the model used. No
        secret sent (a parameter's value, the caller's token, the assertion) is in the text returned."""
        headers, secrets = await self.headers()
        try:
            identity = await identity_headers(
                self.server.identity, ctx, self._assertions, self.server.origin, tool
            )
        except ValueError as exc:
            raise McpCallFailed(str(exc)) from None
        secrets += credentials(identity)
        replaced = {name.lower() for name in identity}  # the server's own Authorization, for listings
        sent = {name: value for name, value in headers.items() if name.lower() not in replaced} | identity
        connection = Connection(self.server.url, sent, seconds, self.mode)
        outcome = await (await self._client()).call_tool(connection, name, arguments)
        return CallOutcome(redact(outcome.text, secrets), outcome.is_error)
