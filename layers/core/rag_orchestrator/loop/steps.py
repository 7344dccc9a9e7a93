"""What one model call of the loop decides: a tagged union the loop handles exhaustively.

After openai-agents-python's `run_internal/run_steps.py`: each iteration ends in exactly one of
FinalAnswer (the turn ends with the model's text), RunTools (run the calls, then iterate again) or
Stop (the turn ends early with a reason, keeping what was answered so far).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rag_orchestrator.domain.events import FinishReason
from rag_orchestrator.domain.messages import ToolCall
from rag_orchestrator.providers.events import Usage


@dataclass(slots=True)
class ModelResponse:
    """What one model call produced, assembled from the strategy's events."""

    content: str = ""
    reasoning: str | None = None
    calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)


@dataclass(frozen=True, slots=True)
class FinalAnswer:
    content: str
    reasoning: str | None = None
    reason: FinishReason = "stop"


@dataclass(frozen=True, slots=True)
class RunTools:
    calls: tuple[ToolCall, ...]
    content: str = ""  # what the model said alongside its calls
    reasoning: str | None = None


@dataclass(frozen=True, slots=True)
class Stop:
    reason: FinishReason
    content: str = ""  # the part of the answer streamed before the turn stopped


NextStep = FinalAnswer | RunTools | Stop


def next_step(
    response: ModelResponse, *, tools_offered: bool, last_call: bool, after_tools: bool
) -> NextStep:
    """Run the calls when tools were offered; otherwise the text is the answer.

    A model that calls tools it was not offered gets its words kept and its calls ignored. The last
    call of a turn is made without tools; when it follows a round of tools, the iteration cap cut
    the turn short: `max_iterations`.
    """
    if response.calls and tools_offered:
        return RunTools(response.calls, response.content, response.reasoning)
    reason: FinishReason = "max_iterations" if last_call and after_tools else "stop"
    return FinalAnswer(response.content, response.reasoning, reason)
