"""Per turn: which tools are offered, and the system prompt that goes with them."""

from __future__ import annotations

from rag_orchestrator.domain.fences import Fence
from rag_orchestrator.loop.ports import ToolChooser, Toolset
from rag_orchestrator.loop.prompts import system_prompt
from rag_orchestrator.loop.request import TurnRequest
from rag_orchestrator.retrieval.query_vector import QueryVector
from rag_orchestrator.tools.registry import ToolRegistry
from rag_orchestrator.tools.selection import ToolSelector


def tool_chooser(registry: ToolRegistry, selector: ToolSelector | None = None) -> ToolChooser:
    """Callers who may not use tools get none (docs/auth.md); others what the selector picks for the
    message, context type and roles, or every registered tool when there is no selector. The turn's
    fence is made here, fresh, with the system prompt that names it."""

    async def choose(request: TurnRequest, vector: QueryVector | None = None) -> Toolset:
        caller = request.caller
        if not caller.may_use_tools:
            names: list[str] = []
        elif selector is None:
            names = [tool.name for tool in registry.all()]
        else:
            chosen = await selector.select(request.message, request.context_type, caller.roles, vector)
            names = [name for name in chosen if registry.get(name) is not None]
        previews = any(getattr(registry.get(name), "preview", None) for name in names)
        fence = Fence()
        prompt = system_prompt(caller.roles, fence, previews=previews)
        return Toolset(
            names=names, definitions=registry.definitions(names), system_prompt=prompt, fence=fence
        )

    return choose
