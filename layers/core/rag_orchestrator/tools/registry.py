"""ToolRegistry: definitions for the model, and execution that never raises into the loop."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any, Protocol

from rag_orchestrator.domain.messages import ToolCall, ToolResult
from rag_orchestrator.domain.text import InvalidText
from rag_orchestrator.observability import logger
from rag_orchestrator.tools.base import Tool, ToolContext, definition, failure
from rag_orchestrator.tools.schema_fit import Fits, quick_fit

MAX_RESULT_CHARS = 20_000


@lru_cache(maxsize=256)
def _validator(schema_json: str) -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(json.loads(schema_json))


# Tool schemas live as long as their tools: look their checks up by identity first, so a call does not
# serialise its schema again (~40 µs a call). The quick check (tools/schema_fit.py) passes the calls that
# plainly fit; jsonschema (~0.12 s of CPU to import) is imported and its validator built only for the rest.
_by_identity: dict[int, tuple[dict[str, Any], str, Fits | None]] = {}


def _checks_of(schema: dict[str, Any]) -> tuple[str, Fits | None]:
    entry = _by_identity.get(id(schema))
    if entry is not None and entry[0] is schema:
        return entry[1], entry[2]
    schema_json, fits = json.dumps(schema, sort_keys=True), quick_fit(schema)
    if len(_by_identity) >= 256:
        _by_identity.clear()
    # Holding the schema keeps its id from being reused.
    _by_identity[id(schema)] = (schema, schema_json, fits)
    return schema_json, fits


def argument_errors(tool: Tool, arguments: dict[str, Any]) -> list[str]:
    """Why the call's arguments would be refused when it runs: against what the tool accepts, which
    may be more than it shows the model (an HTTP tool's pinned parameters, replaced when it runs)."""
    return schema_errors(getattr(tool, "arguments_schema", tool.parameters), arguments)


def schema_errors(schema: dict[str, Any], arguments: dict[str, Any]) -> list[str]:
    """Why `arguments` do not fit `schema` (empty when they do)."""
    schema_json, fits = _checks_of(schema)
    if fits is not None and fits(arguments):
        return []
    return [
        f"{'.'.join(str(p) for p in error.absolute_path) or 'arguments'}: {error.message}"
        for error in _validator(schema_json).iter_errors(arguments)
    ][:5]


class MoreTools(Protocol):
    """Tools beside the fixed ones that change while the process runs (an MCP server's)."""

    def get(self, name: str) -> Tool | None: ...

    def tools(self) -> Sequence[Tool]: ...


class ToolRegistry:
    def __init__(
        self, tools: Iterable[Tool], *, timeout_seconds: float = 30.0, more: MoreTools | None = None
    ) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            if tool.name in self._tools:
                raise ValueError(f"duplicate tool name: {tool.name}")
            self._tools[tool.name] = tool
        self.timeout_seconds = timeout_seconds
        self._more = more

    def get(self, name: str) -> Tool | None:
        tool = self._tools.get(name)
        if tool is None and self._more is not None:
            return self._more.get(name)
        return tool

    def all(self) -> list[Tool]:
        return [*self._tools.values(), *(self._more.tools() if self._more is not None else ())]

    def definitions(self, names: Iterable[str] | None = None) -> list[dict[str, Any]]:
        chosen = self.all() if names is None else (tool for n in names if (tool := self.get(n)) is not None)
        return [definition(tool) for tool in chosen]

    async def execute(
        self, call: ToolCall, ctx: ToolContext, allowed: Iterable[str] | None = None
    ) -> ToolResult:
        """Run one call; unknown tools, bad arguments, errors and timeouts become unsuccessful results."""
        name = call.function.name
        tool = self.get(name)
        if tool is None or (allowed is not None and name not in set(allowed)):
            return failure(name, f"Unknown tool: {name}", call.id)
        try:
            arguments = call.parsed_arguments()
        except InvalidText as exc:
            return failure(name, f"Invalid arguments: {exc}", call.id)
        except ValueError:
            return failure(name, "Arguments are not a valid JSON object", call.id)
        problems = argument_errors(tool, arguments)
        if problems:
            return failure(name, "Invalid arguments: " + "; ".join(problems), call.id)
        try:
            result = await asyncio.wait_for(tool.execute(arguments, ctx), self.timeout_seconds)
        except TimeoutError:
            return failure(name, f"Tool timed out after {self.timeout_seconds:g}s", call.id)
        except Exception as exc:
            logger.warning("tool failed", extra={"tool": name, "error_type": type(exc).__name__})
            return failure(name, f"Tool execution failed: {type(exc).__name__}", call.id)
        if len(result.result) > MAX_RESULT_CHARS:
            result = result.model_copy(update={"result": result.result[:MAX_RESULT_CHARS] + "…[truncated]"})
        return result.model_copy(update={"tool_call_id": call.id, "tool_name": name})

    async def execute_all(
        self, calls: Sequence[ToolCall], ctx: ToolContext, allowed: Iterable[str] | None = None
    ) -> list[ToolResult]:
        """Run the calls of one model response concurrently; results come back in call order."""
        allowed_set = None if allowed is None else frozenset(allowed)
        if len(calls) == 1:  # the common case: no gather task to schedule
            return [await self.execute(calls[0], ctx, allowed_set)]
        return list(await asyncio.gather(*(self.execute(call, ctx, allowed_set) for call in calls)))
