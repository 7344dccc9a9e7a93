"""The EventLog contract: a short-lived record of a streamed turn and its numbered events.

The running turn opens its entry, appends its events in batches and reports while it runs (the
report's answer says whether a cancel was asked for) and once more when it ends (how far it got); a reconnecting client reads the entry and the
events after the last one it saw, or asks for the conversation's running turn (opening a turn also
makes it its conversation's newest). Ownership is part of every read: an unknown, expired or another
caller's turn raises the same TurnNotFound. Entries and events expire LOG_TTL_SECONDS after the
turn's deadline.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:  # a logged event keeps the live one for the stream that is sending it
    from rag_orchestrator.domain.events import StreamEvent

LOG_TTL_SECONDS = 3600
TurnStatus = Literal["running", "ended"]


@dataclass(frozen=True, slots=True)
class LoggedEvent:
    """One stream event as sent: its number in the turn (from 1), its type and its JSON."""

    seq: int
    type: str
    data: str
    event: StreamEvent | None = field(default=None, compare=False, repr=False)  # live only, never logged


@dataclass(frozen=True, slots=True)
class TurnEntry:
    conversation_id: str
    turn_id: str
    caller_id: str
    deadline: float  # epoch seconds by which the turn ends
    status: TurnStatus = "running"
    last_seq: int = 0  # the turn's last event, reported when it ended
    cancel_requested: bool = False

    @property
    def expires_at(self) -> int:
        """Epoch seconds after which the entry and its events are gone (the table's TTL attribute)."""
        return int(self.deadline) + LOG_TTL_SECONDS


class EventLog(Protocol):
    async def open(self, entry: TurnEntry) -> None:
        """Record a running turn (before its first events)."""
        ...

    async def append(self, entry: TurnEntry, events: Sequence[LoggedEvent]) -> None:
        """Store the next events of the turn, numbered on from the last batch, in one write."""
        ...

    async def report(self, entry: TurnEntry, last_seq: int, *, ended: bool = False) -> bool:
        """True when a cancel has been asked for; with `ended`, also record that and the last event."""
        ...

    async def request_cancel(self, conversation_id: str, turn_id: str, caller_id: str) -> None:
        """Ask the running turn to stop; raises TurnNotFound, or TurnEnded when it has ended."""
        ...

    async def get(self, conversation_id: str, turn_id: str, caller_id: str) -> TurnEntry:
        """The caller's turn; raises TurnNotFound."""
        ...

    async def running(self, conversation_id: str, caller_id: str) -> TurnEntry | None:
        """The conversation's newest streamed turn while it runs, when it is the caller's; else None."""
        ...

    async def events(self, conversation_id: str, turn_id: str, from_seq: int = 1) -> list[LoggedEvent]:
        """The logged events of the batches starting at `from_seq` or later, in order; no ownership check."""
        ...

    async def discard(self, entry: TurnEntry) -> None:
        """Delete the turn's entry and events now, and the conversation's newest-turn pointer when it
        names this turn: for a turn whose conversation is gone (deleted or erased while it ran)."""
        ...
