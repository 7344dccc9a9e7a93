"""One turn's state, apart from its dependencies (loop/deps.py): what it was asked and how it opened,
its stop conditions, what it has read and produced so far, and the messages the model is sent.

Each phase of the turn (loop/opening.py, model_call.py, tool_round.py, approvals.py, finish.py) takes
the dependencies and this state; the turn (loop/turn.py) runs them in order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rag_orchestrator.conversations.turn_data import TurnContext
from rag_orchestrator.domain.budgets import Spend
from rag_orchestrator.domain.fences import Fence
from rag_orchestrator.domain.ids import sortable_id
from rag_orchestrator.domain.messages import Message
from rag_orchestrator.loop.attachments import AttachmentReading
from rag_orchestrator.loop.control import TurnControl
from rag_orchestrator.loop.prelude import Prelude
from rag_orchestrator.loop.record import TurnRecord
from rag_orchestrator.loop.request import TurnRequest
from rag_orchestrator.loop.steps import Opening
from rag_orchestrator.loop.turn_events import TurnEvents


@dataclass(eq=False, slots=True)
class TurnState:
    request: TurnRequest  # a continuation's is replaced by one naming the question it goes on answering
    opening: Opening
    control: TurnControl
    attachments: AttachmentReading
    spend: Spend | None = None  # where the turn's tokens count; None while no budget is configured
    prelude: Prelude | None = None  # a continuation's starts once its question is read
    turn_id: str = field(default_factory=sortable_id)
    context: TurnContext | None = None  # what the turn read at its start
    messages: list[Message] = field(default_factory=list)  # what the next model call is sent
    fence: Fence = field(default_factory=Fence)  # the turn's, which its toolset's system prompt names
    partial: list[str] = field(default_factory=list)  # the text streamed by the current model call
    headed: bool = False  # the finalizer's prologue has been streamed
    finished: bool = False  # stored (or given up): the after-turn hooks may run
    events: TurnEvents = field(init=False)
    record: TurnRecord = field(init=False)

    def __post_init__(self) -> None:
        conversation_id = self.request.conversation_id
        self.events = TurnEvents(conversation_id, self.turn_id)
        self.record = TurnRecord(conversation_id, decided=self.opening.decided)
