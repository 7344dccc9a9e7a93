"""Model providers: the strategy protocol and factory, the events strategies emit.

Dialect modules (deepseek, qwen, generic, extractive) and the HTTP client are imported lazily by
`create_strategy`.
"""

from rag_orchestrator.providers.events import (
    ContentChunk,
    FinalResponse,
    IterationComplete,
    IterationContext,
    StrategyEvent,
    StreamingMode,
    ToolCallsComplete,
    Usage,
)
from rag_orchestrator.providers.strategies import STRATEGIES, ModelStrategy, StrategyMetadata, create_strategy

__all__ = [
    "STRATEGIES",
    "ContentChunk",
    "FinalResponse",
    "IterationComplete",
    "IterationContext",
    "ModelStrategy",
    "StrategyEvent",
    "StrategyMetadata",
    "StreamingMode",
    "ToolCallsComplete",
    "Usage",
    "create_strategy",
]
