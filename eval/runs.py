"""Asking the questions through the service's own code: a question alone through the answer endpoint's
(`retrieval/answers.py`), a conversation turn by turn through the chat loop (the orchestrator that the
chat routes run, with conversations in memory)."""

from __future__ import annotations

import contextlib
import io

from eval.questions import QuestionSet
from eval.scoring import Tally, ranked_documents

CALLER = "eval"


class Asker:
    """One configuration (settings and strategy) of the service, built once, asked many questions."""

    def __init__(self, settings) -> None:
        from rag_orchestrator.api.deps import Services

        self.settings = settings
        self.services = Services(settings)
        # A warm process searches by its term index; built now, no answer depends on when a build ends.
        self.services.retriever.lexical.sync()

    async def ranked(self, question: str) -> list[str]:
        from rag_orchestrator.retrieval.search import SearchQuery

        found = await self.services.retriever.search(
            SearchQuery(question, self.settings.rag_topk_default, 0.0)
        )
        return ranked_documents([p.document_id for p in found])

    async def answer(self, question: str) -> str:
        from rag_orchestrator.retrieval.answers import AnswerQuery, collect_answer

        request = AnswerQuery(
            question, top_k=self.settings.rag_topk_default, threshold=self.settings.rag_similarity_threshold
        )
        return (await collect_answer(self.services.answerer.events(request))).answer

    async def converse(self, questions: list[str]) -> list[str]:
        """Each question as a turn of one new conversation; the text each turn streamed."""
        from rag_orchestrator.domain.callers import Caller
        from rag_orchestrator.domain.conversations import Conversation
        from rag_orchestrator.loop.ports import TurnRequest

        caller = Caller(CALLER, ("user",))
        store, orchestrator = self.services.store, self.services.orchestrator
        conversation = await store.create(Conversation(caller_id=CALLER))
        answers = []
        for question in questions:
            turn = await orchestrator.begin(TurnRequest(conversation.conversation_id, caller, question))
            text = []
            async for event in turn.events():
                if event.type == "ResponseChunk":
                    text.append(event.content)
                elif event.type == "Error":
                    text.append(f"[Error: {event.error}]")
            answers.append("".join(text))
        return answers

    async def evaluate(self, questions: QuestionSet) -> Tally:
        tally = Tally()
        # Powertools prints its metrics every 100 values, POWERTOOLS_METRICS_DISABLED or not.
        with contextlib.redirect_stdout(io.StringIO()):
            for q in questions.singles:
                if q.answerable:
                    tally.add_retrieval(q, await self.ranked(q.question))
                tally.add_answer(q, await self.answer(q.question))
            for conversation in questions.conversations:
                opener = conversation[0]
                tally.add_retrieval(opener, await self.ranked(opener.question))
                answers = await self.converse([q.question for q in conversation])
                for q, answer in zip(conversation, answers, strict=True):
                    tally.add_answer(q, answer)
        return tally
