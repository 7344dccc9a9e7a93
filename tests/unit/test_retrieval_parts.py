"""The pure parts of retrieval: reciprocal rank fusion, BM25 scoring, the local reranker, reading a rerank
API's answer, and a follow-up made a search query of its own (with a scripted model, and without one)."""

from __future__ import annotations

import httpx
import pytest

from rag_orchestrator.domain.messages import Message, Role
from rag_orchestrator.domain.passages import Passage
from rag_orchestrator.retrieval.chroma_http import QueryRow
from rag_orchestrator.retrieval.followup import FollowUps, earlier_questions
from rag_orchestrator.retrieval.fusion import fuse
from rag_orchestrator.retrieval.lexical import QueryTerms, query_terms, rank
from rag_orchestrator.retrieval.local_reranker import LocalReranker
from rag_orchestrator.retrieval.rerankers import RerankerFailed, read_order
from rag_orchestrator.text.terms import terms
from tests.fakes.scripted import ScriptedStrategy, answer


def passage(document_id: str, score: float = 0.5, text: str = "", title: str = "") -> Passage:
    return Passage(document_id=document_id, title=title, chunk_index=0, score=score, text=text or document_id)


def test_fusion_adds_reciprocal_ranks_and_keeps_a_passages_best_score():
    dense = [passage("a", 0.9), passage("b", 0.8), passage("c", 0.7)]
    lexical = [passage("c", 0.95), passage("b", 0.4), passage("d", 0.3)]
    fused = fuse([dense, lexical])
    # c: 1/61 + 1/63 (first and third) edges out b: 1/62 + 1/62 (second twice); a and d once each
    assert [p.document_id for p in fused] == ["c", "b", "a", "d"]
    assert next(p for p in fused if p.document_id == "c").score == 0.95
    assert fuse([dense]) == dense and fuse([]) == []


def test_bm25_ranks_rare_words_and_repeats_and_scores_coverage():
    weights = QueryTerms(
        {t: w for t, w in zip(terms("veggie burger kcal", implied=False), (3.0, 2.0, 1.0), strict=True)}
    )
    rows = [
        QueryRow(
            "menu#0",
            "Veggie burger with fries: 910 kcal. The veggie burger is our best seller.",
            {"documentId": "menu"},
            0.0,
        ),
        QueryRow("menu#1", "Every burger comes with fries.", {"documentId": "menu", "chunkIndex": 1}, 0.0),
        QueryRow("hours#0", "We open at 07:30.", {"documentId": "hours"}, 0.0),
    ]
    ranked = rank(rows, weights)
    assert [(p.document_id, p.chunk_index) for p in ranked] == [
        ("menu", 0),
        ("menu", 1),
    ]  # no match: not ranked
    assert ranked[0].score == 1.0 and ranked[1].score == pytest.approx(2.0 / 6.0)
    assert query_terms("What is the price of the veggie burger?") == terms(
        "price veggie burger", implied=False
    )


async def test_the_local_reranker_raises_the_passage_that_states_the_fact_asked_for():
    chunks = [
        passage("menu-intro", text="Our veggie burger is loved by all.", title="Menu"),
        passage("menu-prices", text="Veggie burger: €11.40. Lentil soup: €5.80.", title="Menu"),
        passage("hours", text="We are open from 07:30.", title="Hours"),
    ]
    order = await LocalReranker().rerank("How much is the veggie burger?", chunks, 2)
    assert [p.document_id for p in order] == ["menu-prices", "menu-intro"]
    assert await LocalReranker().rerank("anything", chunks[:1], 5) == chunks[:1]


def response(body: object) -> httpx.Response:
    return httpx.Response(200, json=body)


def test_a_rerank_answer_is_read_most_relevant_first_and_checked():
    body = {"results": [{"index": 2, "relevance_score": 0.2}, {"index": 0, "relevance_score": 0.9}]}
    assert read_order(response(body), 3) == [0, 2]
    for bad in ({"results": [{"index": 5, "relevance_score": 1}]}, {"results": [{"index": 0}]}, {"data": []}):
        with pytest.raises(RerankerFailed):
            read_order(response(bad), 3)
    with pytest.raises(RerankerFailed):
        read_order(
            response({"results": [{"index": 1, "relevance_score": 1}, {"index": 1, "relevance_score": 0}]}), 3
        )


WINDOW = [
    Message(role=Role.USER, content="When does the Riverside Pool open on weekdays?"),
    Message(role=Role.ASSISTANT, content="At 06:30 [source:pool#0]."),
    Message(role=Role.USER, content="And on Saturdays?"),
]


def test_the_earlier_questions_are_those_before_the_message():
    assert earlier_questions("And on Saturdays?", WINDOW) == [
        "When does the Riverside Pool open on weekdays?"
    ]
    assert (
        earlier_questions("When does it open?", [Message(role=Role.USER, content="When does it open?")]) == []
    )


async def test_without_a_model_a_follow_up_borrows_the_earlier_questions_words():
    assert await FollowUps().query("And on Saturdays?", WINDOW) == "And on Saturdays? Riverside Pool open"
    assert await FollowUps().query("And on Saturdays?", WINDOW[-1:]) == "And on Saturdays?"  # a first turn


async def test_with_a_model_one_short_call_condenses_the_follow_up():
    model = ScriptedStrategy([answer("When does the Riverside Pool open on Saturdays?")])
    assert (
        await FollowUps(lambda: model).query("And on Saturdays?", WINDOW)
        == "When does the Riverside Pool open on Saturdays?"
    )
    [(messages, tools, ctx)] = model.requests
    assert tools == [] and ctx.allow_tools is False and ctx.max_tokens == 80
    assert "Riverside Pool" in messages[1].content and "[source:" not in messages[1].content
    assert messages[1].content.endswith("Last message: And on Saturdays?")


async def test_a_failing_condensing_call_falls_back_to_the_borrowed_words():
    model = ScriptedStrategy([[RuntimeError("model down")]])
    assert (
        await FollowUps(lambda: model).query("And on Saturdays?", WINDOW)
        == "And on Saturdays? Riverside Pool open"
    )
    silent = ScriptedStrategy([answer("   ")])
    assert (
        await FollowUps(lambda: silent).query("And on Saturdays?", WINDOW)
        == "And on Saturdays? Riverside Pool open"
    )


def test_what_the_reranker_keeps_of_a_sentence_changes_no_score_for_the_next_question():
    from eval.questions import corpus_documents, question_sets
    from rag_orchestrator.providers.passage_reading import ReadPassages
    from rag_orchestrator.providers.sentence_picker import Passage as Quotable
    from rag_orchestrator.providers.sentence_picker import passage_candidates
    from rag_orchestrator.providers.sentence_rules import wants_steps
    from rag_orchestrator.providers.sentence_scoring import answered_kind, read_question, score
    from rag_orchestrator.retrieval.chunking import chunk_document
    from rag_orchestrator.text import answer_kinds
    from rag_orchestrator.text.answer_kinds import counted

    chunks = [
        Quotable(c.metadata["documentId"], i, c.text, title=str(c.metadata["title"]))
        for d in corpus_documents()
        for i, c in enumerate(chunk_document(d["documentId"], d["title"], d["text"], size=800, overlap=120))
    ]
    asked = [q.question for s in question_sets() for q in s.singles][::2]
    kept, kinds_met = ReadPassages(), set()
    for n, question in enumerate(asked):
        passages = chunks[n % 7 :: 7][:8]  # each passage met by many questions, their sentences kept
        steps = wants_steps(question)
        read = read_question(question, steps=steps)
        fresh = [c for p in passages for c in passage_candidates(p, 0, question, set())]
        warm = [
            c for p in passages for c in passage_candidates(p, 0, question, set(), kept.of(p.text, p.title))
        ]
        assert score(read, warm) == score(read, fresh), question
        unit = counted(question)
        for c in warm:
            held = answered_kind(read, c, unit) if read.kinds else None
            assert held == (answer_kinds.answered_kind(question, c.text, read.kinds) if read.kinds else None)
            kinds_met.add(held)
            if c.action:
                assert c.action_terms == frozenset(terms(c.action))
    assert len(kinds_met) >= 4  # prices, times, numbers…: the kinds' memo was exercised
