"""Titles as text: a model's reply cleaned, a question cut to a phrase, search words and their match."""

import pytest

from rag_orchestrator.conversations.titles import (
    clean_title,
    matches,
    phrase_of,
    query_words,
    title_search,
)
from rag_orchestrator.errors import BadRequest


@pytest.mark.parametrize(
    ("reply", "title"),
    [
        ('"Refund delays."', "Refund delays"),
        ("Title: Shipping abroad\nbecause you asked", "Shipping abroad"),
        ("**Café hours**", "Café hours"),
        ("   \n  ", None),
        ("word " * 40, ("word " * 23).strip() + "…"),
    ],
)
def test_a_models_reply_becomes_a_title(reply, title):
    assert clean_title(reply) == title


def test_a_title_is_at_most_120_characters():
    assert len(clean_title("x" * 500) or "") == 120


@pytest.mark.parametrize(
    ("question", "phrase"),
    [
        ("what port does the dev server use? I tried 8080.", "What port does the dev server use?"),
        ("  many   spaces\nand lines ", "Many spaces and lines"),
        ("a" * 80, "A" + "a" * 58 + "…"),
        ("?!", None),
    ],
)
def test_a_question_is_cut_to_a_phrase(question, phrase):
    assert phrase_of(question) == phrase


def test_words_match_from_their_start_case_and_accents_aside():
    held = title_search("Café OPENING-hours, 2026")
    assert held == " cafe opening hours 2026"
    assert matches("Café OPENING-hours", query_words("cafe open"))
    assert not matches("Café OPENING-hours", query_words("pening"))
    assert not matches(None, query_words("cafe"))
    assert query_words("Refund refund REFUND") == ["refund"]


@pytest.mark.parametrize("query", ["?!", "one two three four five six seven eight nine", "x" * 201])
def test_a_query_without_words_or_with_too_many_is_refused(query):
    with pytest.raises(BadRequest):
        query_words(query)
