"""Builds the orchestrator a process uses, once: strategy, tools, conversations, finalizer."""

from __future__ import annotations

from functools import lru_cache

from rag_orchestrator.config import Settings, get_settings
from rag_orchestrator.loop.finalizers import FINALIZERS
from rag_orchestrator.loop.orchestrator import Orchestrator, Toolset, TurnRequest
from rag_orchestrator.loop.prompts import system_prompt
from rag_orchestrator.tools.registry import ToolRegistry
from rag_orchestrator.tools.selection import ToolSelector
from rag_orchestrator.tools.toolbox import Toolbox, build_toolbox


def tool_chooser(registry: ToolRegistry, selector: ToolSelector | None = None):
    """Per turn: anonymous callers get no tools (seed 002); others what the selector picks for the
    message, context and roles, or every registered tool when there is no selector."""

    async def choose(request: TurnRequest) -> Toolset:
        caller = request.caller
        if caller.anonymous:
            names: list[str] = []
        elif selector is None:
            names = [tool.name for tool in registry.all()]
        else:
            chosen = await selector.select(request.message, request.context_type, caller.roles)
            names = [name for name in chosen if registry.get(name) is not None]
        previews = any(getattr(registry.get(name), "preview", None) for name in names)
        prompt = system_prompt(caller.roles, request.context_type, request.context, previews=previews)
        return Toolset(names=names, definitions=registry.definitions(names), system_prompt=prompt)

    return choose


@lru_cache(maxsize=4)
def toolbox_for(settings: Settings) -> Toolbox:
    return build_toolbox(settings)


def get_toolbox() -> Toolbox:
    """The process's tools; the first call loads and validates the catalogue (ConfigError if wrong)."""
    return toolbox_for(get_settings())


@lru_cache(maxsize=1)
def get_orchestrator() -> Orchestrator:
    from rag_orchestrator.conversations.context import get_context_manager
    from rag_orchestrator.providers.strategies import create_strategy

    settings = get_settings()
    toolbox = get_toolbox()
    return Orchestrator(
        context=get_context_manager(settings),
        strategy=create_strategy(settings),
        registry=toolbox.registry,
        settings=settings,
        choose_tools=tool_chooser(toolbox.registry, toolbox.selector),
        finalizer=FINALIZERS[settings.loop_finalizer](),
    )
