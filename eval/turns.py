"""The question set asked as chat turns (`python -m eval --turns`): each question in a new conversation of
one caller, the whole set twice, with conversation memory on and off. The second round is scored: with
memory on it can recall the first round's questions and answers, which must not cost accuracy (an
answer quoting an earlier answer instead of the document is the echo docs/memory.md rules out).
"""

from __future__ import annotations

import uuid

from eval.questions import Question
from eval.scoring import Tally, ranked_documents

ROUNDS = 2


async def ask_as_turns(questions: list[Question], settings, *, memory: bool) -> Tally:
    """The last round's tally: every question a turn of the offline extractive model."""
    from rag_orchestrator.api.deps import Services
    from rag_orchestrator.domain.callers import Caller
    from rag_orchestrator.domain.conversations import Conversation
    from rag_orchestrator.loop.request import TurnRequest
    from rag_orchestrator.providers.events import StreamingMode

    services = Services(
        settings.model_copy(
            update={
                "model_strategy": "extractive",
                "memory_enabled": memory,
                "chroma_memory_collection": f"eval-memory-{uuid.uuid4().hex[:12]}",
                "auto_title": False,
            }
        )
    )
    caller = Caller("eval-caller", ("user",))
    tally = Tally()
    for _ in range(ROUNDS):
        tally = Tally()
        for question in questions:
            conversation = await services.store.create(Conversation(caller_id=caller.caller_id))
            request = TurnRequest(
                conversation.conversation_id, caller, question.question, mode=StreamingMode.FINAL_ONLY
            )
            turn = await services.orchestrator.begin(request)
            async for _ in turn.events():
                pass
            await turn.after()  # memory indexes the turn before the next question
            record = turn.state.record
            found = list(record.passages.values())
            if question.answerable:
                tally.add_retrieval(question, ranked_documents([p.document_id for p in found]))
            tally.add_answer(question, record.content)
    return tally
