"""A turn's typed steps: how it opens, and what each model call decides. Tagged unions the loop
handles exhaustively.

After openai-agents-python's `run_internal/run_steps.py`: a turn opens on a Question (a new, edited or
regenerated one) or as a Continuation after a decision on a held call; each iteration ends in exactly
one of FinalAnswer (the turn ends with the model's text), RunTools (run the calls, then iterate
again), HoldForApproval (run the others, hold one call for its caller's decision: the turn ends
awaiting it) or Stop (the turn ends early with a reason, keeping what was answered so far).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from rag_orchestrator.conversations.versions import PLAIN, Revision
from rag_orchestrator.domain.approvals import Resolution
from rag_orchestrator.domain.conversations import ConversationMessage
from rag_orchestrator.domain.events import FinishReason
from rag_orchestrator.domain.messages import ToolCall
from rag_orchestrator.providers.events import Usage

# ------------------------------------------------------------------ how a turn opens


@dataclass(slots=True)
class Question:
    """A turn that answers `message`, stored by its claim (an edit's: by its finish)."""

    message: ConversationMessage
    revision: Revision = PLAIN  # a regenerate or an edit: the exchange the turn replaces
    decided: Resolution | None = None  # a held call that expired, answered as denied by the claim

    @property
    def question(self) -> ConversationMessage:
        return self.message


@dataclass(slots=True)
class Continuation:
    """A turn that goes on after the decision on its held call: that call's result comes first."""

    decided: Resolution

    @property
    def question(self) -> None:
        return None  # it goes on answering the question before it, which is stored already

    @property
    def revision(self) -> Revision:
        return PLAIN


Opening = Question | Continuation

# ------------------------------------------------------------------ what a model call decides


@dataclass(slots=True)
class ModelOutput:
    """What one model call produced, assembled from the strategy's events."""

    content: str = ""
    reasoning: str | None = None
    calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None  # the provider's, when it said (traces: gen_ai.response.finish_reasons)


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
class HoldForApproval:
    """The model called a tool that needs its caller's approval (docs/approvals.md): `held` waits for
    the decision, `run` (the calls that need none) run now, `refused` (further approval calls of the
    step) are answered "not run": one decision per turn."""

    calls: tuple[ToolCall, ...]  # every call of the step, as the model made them
    held: ToolCall
    run: tuple[ToolCall, ...] = ()
    refused: tuple[ToolCall, ...] = ()
    content: str = ""
    reasoning: str | None = None


@dataclass(frozen=True, slots=True)
class Stop:
    reason: FinishReason
    content: str = ""  # the part of the answer streamed before the turn stopped


NextStep = FinalAnswer | RunTools | HoldForApproval | Stop


def _never(call: ToolCall) -> bool:
    return False


def next_step(
    output: ModelOutput,
    *,
    tools_offered: bool,
    last_call: bool,
    after_tools: bool,
    needs_approval: Callable[[ToolCall], bool] = _never,
) -> NextStep:
    """Run the calls when tools were offered, holding the first that `needs_approval`; otherwise the
    text is the answer.

    A model that calls tools it was not offered gets its words kept and its calls ignored. The last
    call of a turn is made without tools; when it follows a round of tools, the iteration cap cut
    the turn short: `max_iterations`.
    """
    if output.calls and tools_offered:
        calls = output.calls
        waits = [needs_approval(call) for call in calls]
        if any(waits):
            held = [call for call, wait in zip(calls, waits, strict=True) if wait]
            run = tuple(call for call, wait in zip(calls, waits, strict=True) if not wait)
            return HoldForApproval(calls, held[0], run, tuple(held[1:]), output.content, output.reasoning)
        return RunTools(output.calls, output.content, output.reasoning)
    reason: FinishReason = "max_iterations" if last_call and after_tools else "stop"
    return FinalAnswer(output.content, output.reasoning, reason)
