"""The event log in process memory (CONVERSATION_STORAGE=memory): the DynamoDB log's behaviour without AWS.

Nothing here waits, so every method runs on the event loop; the lock guards a log shared with another
thread's loop, as a test client does. A reconnecting client must reach the same process.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from rag_orchestrator.errors import TurnEnded, TurnNotFound
from rag_orchestrator.stream_log.log import LoggedEvent, TurnEntry


@dataclass
class _Turn:
    entry: TurnEntry
    batches: list[list[LoggedEvent]] = field(default_factory=list)


class InProcessEventLog:
    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._turns: dict[tuple[str, str], _Turn] = {}
        self._latest: dict[str, str] = {}  # conversation id -> its newest turn's id
        self._lock = threading.Lock()

    async def open(self, entry: TurnEntry) -> None:
        with self._lock:
            self._turns[(entry.conversation_id, entry.turn_id)] = _Turn(entry)
            self._latest[entry.conversation_id] = entry.turn_id

    async def append(self, entry: TurnEntry, events: Sequence[LoggedEvent]) -> None:
        with self._lock:
            turn = self._turns.get((entry.conversation_id, entry.turn_id))
            if turn is not None:
                turn.batches.append(list(events))

    async def report(self, entry: TurnEntry, last_seq: int, *, ended: bool = False) -> bool:
        with self._lock:
            turn = self._live(entry.conversation_id, entry.turn_id)
            if turn is None:
                return False
            if ended:  # as the DynamoDB log: a running turn's report only asks
                turn.entry = replace(turn.entry, last_seq=last_seq, status="ended")
            return turn.entry.cancel_requested

    async def request_cancel(self, conversation_id: str, turn_id: str, caller_id: str) -> None:
        with self._lock:
            turn = self._owned(conversation_id, turn_id, caller_id)
            if turn.entry.status == "ended":
                raise TurnEnded(turn_id)
            turn.entry = replace(turn.entry, cancel_requested=True)

    async def get(self, conversation_id: str, turn_id: str, caller_id: str) -> TurnEntry:
        with self._lock:
            return self._owned(conversation_id, turn_id, caller_id).entry

    async def running(self, conversation_id: str, caller_id: str) -> TurnEntry | None:
        with self._lock:
            turn = self._live(conversation_id, self._latest.get(conversation_id, ""))
        if turn is None or turn.entry.caller_id != caller_id or turn.entry.status != "running":
            return None
        return turn.entry

    async def events(self, conversation_id: str, turn_id: str, from_seq: int = 1) -> list[LoggedEvent]:
        with self._lock:
            turn = self._live(conversation_id, turn_id)
            batches = list(turn.batches) if turn is not None else []
        return [event for batch in batches if batch[0].seq >= from_seq for event in batch]

    async def discard(self, entry: TurnEntry) -> None:
        with self._lock:
            self._turns.pop((entry.conversation_id, entry.turn_id), None)
            if self._latest.get(entry.conversation_id) == entry.turn_id:
                del self._latest[entry.conversation_id]

    def _live(self, conversation_id: str, turn_id: str) -> _Turn | None:
        turn = self._turns.get((conversation_id, turn_id))
        if turn is not None and turn.entry.expires_at < self._clock():
            del self._turns[(conversation_id, turn_id)]
            return None
        return turn

    def _owned(self, conversation_id: str, turn_id: str, caller_id: str) -> _Turn:
        turn = self._live(conversation_id, turn_id)
        if turn is None or turn.entry.caller_id != caller_id:
            raise TurnNotFound(turn_id)
        return turn
