"""The after-turn hooks (conversation memory, titles): run once the terminal event is out.

Each hook is bounded, because the response (and a Lambda invocation) ends only when they return,
and shielded from a client gone meanwhile. A hook's failure is logged and never reaches the turn.
"""

from __future__ import annotations

from collections.abc import Sequence

import anyio

from rag_orchestrator.loop.ports import AfterTurn
from rag_orchestrator.loop.record import TurnRecord
from rag_orchestrator.loop.request import TurnRequest
from rag_orchestrator.observability import logger

AFTER_TURN_SECONDS = 5.0  # each hook's share of the time after the terminal event


async def run_after_turn(hooks: Sequence[AfterTurn], request: TurnRequest, record: TurnRecord) -> None:
    with anyio.CancelScope(shield=True):
        for hook in hooks:
            with anyio.move_on_after(AFTER_TURN_SECONDS) as bounded:
                try:
                    await hook(request, record)
                except Exception:
                    logger.exception("after-turn work failed", extra={"hook": type(hook).__name__})
            if bounded.cancelled_caught:
                logger.warning("after-turn work cut off", extra={"hook": type(hook).__name__})
