"""When a running turn must stop — its deadline, or a cancel — and the turns running in this process.

The loop awaits each slow step (a model chunk, the tool calls, the knowledge search) through
`TurnControl.wait`; at the turn's deadline, or on a cancel, the step being awaited is cancelled at
once and raises TurnStopped, which the loop turns into a typed Stop.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import threading
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, TypeVar

from rag_orchestrator.domain.events import FinishReason

T = TypeVar("T")


class TurnStopped(Exception):
    def __init__(self, reason: FinishReason) -> None:
        super().__init__(reason)
        self.reason = reason


class TurnControl:
    """The stop conditions of one turn: `deadline` in epoch seconds, and `cancel()`.

    Cheap per step, as a turn awaits one per streamed chunk: the deadline is one timer for the whole
    turn, and a stop cancels the turn's task only while it awaits a step, turning that CancelledError
    back into TurnStopped.
    """

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.reason: FinishReason | None = None
        self._task: asyncio.Task[Any] | None = None  # the task awaiting steps
        self._timer: asyncio.TimerHandle | None = None
        self._waiting = False  # the task is suspended in a step
        self._stopping = False  # we cancelled that step

    def lease_seconds(self, margin: float) -> int:
        """How long the turn's lock must hold: to the deadline plus `margin`, so that a function killed
        at its timeout leaves the conversation locked no longer than that."""
        return max(1, math.ceil(self.deadline + margin - time.time()))

    def cancel(self) -> None:
        """Stop the turn: the step it awaits ends now, and it starts no other."""
        self._stop("cancelled")

    def check(self) -> None:
        """Raise TurnStopped when the turn has been cancelled or its deadline has passed."""
        if self.reason is None and time.time() >= self.deadline:
            self.reason = "deadline"
        if self.reason is not None:
            raise TurnStopped(self.reason)

    async def wait(self, step: Awaitable[T]) -> T:
        """Await `step`, cut off at the deadline or by a cancel (TurnStopped)."""
        # check(), inline: a turn waits once per streamed chunk
        if self.reason is None and time.time() >= self.deadline:
            self.reason = "deadline"
        if self.reason is not None:
            if inspect.iscoroutine(step):
                step.close()  # never started: no "never awaited" warning
            raise TurnStopped(self.reason)
        if self._timer is None:
            self._task = asyncio.current_task()
            loop = asyncio.get_running_loop()
            self._timer = loop.call_at(loop.time() + self.deadline - time.time(), self._stop, "deadline")
        self._waiting = True
        try:
            return await step
        except asyncio.CancelledError:
            if not self._stopping:
                raise  # not ours: the task itself is being cancelled
            self._stopping = False
            assert self._task is not None and self.reason is not None
            self._task.uncancel()
            raise TurnStopped(self.reason) from None
        finally:
            self._waiting = False
            if self._stopping and self._task is not None:  # the step swallowed our cancel
                self._stopping = False
                self._task.uncancel()

    def close(self) -> None:
        """The turn has ended: its deadline no longer matters."""
        if self._timer is not None:
            self._timer.cancel()

    def _stop(self, reason: FinishReason) -> None:
        if self.reason is None:
            self.reason = reason
        if self._waiting and not self._stopping and self._task is not None:
            self._stopping = True
            self._task.cancel()


@dataclass(frozen=True, slots=True)
class _Running:
    conversation_id: str
    caller_id: str
    control: TurnControl
    loop: asyncio.AbstractEventLoop


class RunningTurns:
    """The streamed turns of this process by turnId, so a cancel received here stops one at once."""

    def __init__(self) -> None:
        self._turns: dict[str, _Running] = {}
        self._lock = threading.Lock()

    def add(self, turn_id: str, conversation_id: str, caller_id: str, control: TurnControl) -> None:
        with self._lock:
            self._turns[turn_id] = _Running(conversation_id, caller_id, control, asyncio.get_running_loop())

    def remove(self, turn_id: str) -> None:
        with self._lock:
            self._turns.pop(turn_id, None)

    def cancel(self, conversation_id: str, turn_id: str, caller_id: str) -> bool:
        """Cancel the caller's turn if it runs here; False when it does not."""
        with self._lock:
            running = self._turns.get(turn_id)
        if running is None or (running.conversation_id, running.caller_id) != (conversation_id, caller_id):
            return False
        running.loop.call_soon_threadsafe(running.control.cancel)
        return True
