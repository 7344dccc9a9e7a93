"""Loop cost by history length: one turn in conversations of 10, 100 and 1,000 messages.

The scripted strategy and the in-memory store (no I/O), as in `loop`: each conversation is filled
by turns of the same orchestrator, then 300 more turns are timed. The rolling window
(CONVERSATION_ROLLING_WINDOW) bounds what a turn reads and sends, so the cost must stay flat.
"""

from __future__ import annotations

import asyncio
import time

from bench.report import Section

LENGTHS = (10, 100, 1000)
FLAT = 1.25  # the largest ratio of the 1,000-message turn to the 10-message one called flat


async def _turn(orchestrator: object, conversation_id: str) -> float:
    from rag_orchestrator.domain.callers import Caller
    from rag_orchestrator.loop.request import TurnRequest

    request = TurnRequest(conversation_id=conversation_id, caller=Caller("bench"), message="How do I run it?")
    started = time.perf_counter()
    turn = await orchestrator.begin(request)  # type: ignore[attr-defined]
    async for _ in turn.events():
        pass
    return (time.perf_counter() - started) * 1000


def run(quick: bool = False) -> Section:
    from rag_orchestrator.domain.conversations import Conversation
    from tests.fakes.scripted import ScriptedStrategy, answer, scripted_orchestrator

    section = Section("history")
    timed = 50 if quick else 300
    medians = {}

    async def main() -> None:
        for length in LENGTHS:
            orchestrator = scripted_orchestrator(
                ScriptedStrategy([answer("Run make test.")], repeat_last=True)
            )
            created = await orchestrator.deps.store.create(Conversation(caller_id="bench"))
            for _ in range(length // 2):  # a turn stores the question and the answer
                await _turn(orchestrator, created.conversation_id)
            samples = [await _turn(orchestrator, created.conversation_id) for _ in range(timed)]
            medians[length] = section.add(f"one turn after {length} messages", "ms", samples).median

    asyncio.run(main())
    ratio = medians[LENGTHS[-1]] / medians[LENGTHS[0]]
    figure = section.add(f"turn at {LENGTHS[-1]} messages ÷ turn at {LENGTHS[0]}", "ratio", ratio)
    figure.goal, figure.met = f"<= {FLAT} (flat)", ratio <= FLAT
    return section
