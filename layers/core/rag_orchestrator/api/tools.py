"""GET /api/v1/agent/tools: the tools the caller's roles may use, rag_search included."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Depends

from rag_orchestrator.api.auth import get_caller
from rag_orchestrator.api.deps import Services, get_toolbox
from rag_orchestrator.domain.base import CamelModel
from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.tools.toolbox import Toolbox

router = APIRouter(tags=["agent"])


class ToolInfo(CamelModel):
    name: str
    description: str
    parameters: dict[str, Any]
    contexts: list[str] | None = None  # None: offered in every context
    core: bool = False  # always offered in its contexts
    preview: Literal["workflow_preview", "table_config_preview"] | None = None
    approval: Literal["required"] | None = None  # required: held for the caller's decision when called


class ToolList(CamelModel):
    tools: list[ToolInfo]


@router.get("/api/v1/agent/tools", response_model=ToolList, summary="Tools visible to the caller's role")
async def list_tools(
    caller: Caller = Depends(get_caller), toolbox: Toolbox = Depends(get_toolbox)
) -> ToolList:
    """Anonymous callers get answers without tools, so their list is empty."""
    return ToolList(tools=[ToolInfo(**tool) for tool in await toolbox.listing(caller.roles)])


def check(services: Services) -> None:
    """Validate the tool catalogue at start: a bad one stops the function with a ConfigError."""
    _ = services.toolbox  # building it validates the catalogue
