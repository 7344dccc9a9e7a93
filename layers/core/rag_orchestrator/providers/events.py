"""What a strategy emits during one model iteration: a tagged union on `type`.

Reasoning travels only in ToolCallsComplete.reasoning and FinalResponse.reasoning: the loop stores it
for replay and audit, and never forwards it to a client. Streamed pieces of reasoning and of tool
calls are not events: the strategy assembles them and emits the whole.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal

from rag_orchestrator.domain.messages import ToolCall

CHARS_PER_TOKEN = 4


class StreamingMode(StrEnum):
    PROGRESSIVE = "PROGRESSIVE"  # chunks as they arrive (SSE)
    FINAL_ONLY = "FINAL_ONLY"  # one result per iteration (REST)


@dataclass(frozen=True, slots=True)
class IterationContext:
    conversation_id: str
    iteration: int
    max_iterations: int
    streaming_mode: StreamingMode = StreamingMode.PROGRESSIVE
    allow_tools: bool = True  # False on the loop's last call at the iteration cap
    max_tokens: int | None = None  # a smaller cap for a short call (a title); None: MODEL_MAX_TOKENS

    @property
    def progressive(self) -> bool:
        return self.streaming_mode is StreamingMode.PROGRESSIVE


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    estimated: bool = False

    @classmethod
    def estimate(cls, prompt_chars: int, completion_chars: int) -> Usage:
        """About four characters per token, for providers that report no usage."""
        prompt = math.ceil(prompt_chars / CHARS_PER_TOKEN)
        completion = math.ceil(completion_chars / CHARS_PER_TOKEN)
        return cls(prompt, completion, prompt + completion, estimated=True)


@dataclass(frozen=True, slots=True)
class ContentChunk:
    content: str
    type: Literal["ContentChunk"] = field(default="ContentChunk", init=False)


@dataclass(frozen=True, slots=True)
class ToolCallsComplete:
    tool_calls: tuple[ToolCall, ...]
    assistant_content: str = ""
    reasoning: str | None = None
    type: Literal["ToolCallsComplete"] = field(default="ToolCallsComplete", init=False)


@dataclass(frozen=True, slots=True)
class FinalResponse:
    content: str
    reasoning: str | None = None
    type: Literal["FinalResponse"] = field(default="FinalResponse", init=False)


@dataclass(frozen=True, slots=True)
class IterationComplete:
    usage: Usage
    finish_reason: str | None = None  # the provider's own (`length`: cut at its token limit), for traces
    type: Literal["IterationComplete"] = field(default="IterationComplete", init=False)


StrategyEvent = ContentChunk | ToolCallsComplete | FinalResponse | IterationComplete
