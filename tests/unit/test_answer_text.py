"""The text pieces the answers read questions with: kinds of facts, terms and synonyms, weekdays, table rows,
follow-ups."""

from __future__ import annotations

import re

import pytest

from rag_orchestrator.text.answer_kinds import answered_kind, asked_kinds, holds
from rag_orchestrator.text.follow_ups import points_back, previous_question, standalone
from rag_orchestrator.text.sentences import segments
from rag_orchestrator.text.tables import rows
from rag_orchestrator.text.terms import SLOTS, implied_days, search_pattern, slots, terms


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("How much is a flat white?", "price"),
        ("What does the sandwich cost?", "price"),
        ("Until what time is the café open on Saturdays?", "time"),
        ("When does the bakery shut?", "time"),
        ("On which day is the blue bin emptied?", "date"),
        ("When is the Christmas concert?", "date"),
        ("How long does a check-up take?", "duration"),
        ("How far ahead should we book?", "duration"),
        ("How many lanes does the pool have?", "number"),
        ("What is the phone number of the practice?", "phone"),
        ("Who runs the café?", "person"),
        ("Which dentist sees children?", "person"),
        ("Where can I park?", "place"),
        ("What is the address of the museum?", "place"),
    ],
)
def test_the_kind_of_fact_a_question_asks_for(question, kind):
    assert asked_kinds(question)[0] == kind


@pytest.mark.parametrize(
    "question",
    ["Can I pay by card?", "Is the library open on Mondays?", "How do I cancel a running turn?",
     "What does the query endpoint answer when Chroma is down?", "How are refunds paid?"],
)  # fmt: skip
def test_yes_no_how_to_and_what_questions_ask_for_no_kind(question):
    assert asked_kinds(question) == ()


@pytest.mark.parametrize(
    ("kind", "text", "held"),
    [
        ("price", "A pot of tea costs €2.60.", True),
        ("price", "Oat milk is free of charge.", True),
        ("price", "The café sits on the quay.", False),
        ("time", "We close at 16:00.", True),
        ("time", "Closed on Mondays.", True),
        ("date", "Collected on Wednesdays.", True),
        ("date", "It runs until 30 November.", True),
        ("duration", "A check-up takes about 20 minutes.", True),
        ("duration", "Books are lent for three weeks.", True),
        ("phone", "Call 0180 599 1100 at night.", True),
        ("phone", "Lines 3 and 7 stop there.", False),
        ("person", "It is run by Marta Okafor.", True),
        ("person", "It is on Market Square, by the Harbour Café.", False),
        ("place", "The fitness room is in the basement.", True),
        ("place", "Ask on StackOverflow.", True),
        ("place", "Welcome to the Seaview Hotel.", False),
    ],
)
def test_whether_a_text_holds_a_fact_of_a_kind(kind, text, held):
    assert holds(kind, text) is held


def test_a_count_must_name_what_it_counts():
    question = "How many calories are in the veggie burger?"
    assert answered_kind(question, "Veggie burger: €11.40, 910 kcal") == "number"
    assert answered_kind(question, "Veggie burger: €11.40") is None  # a number, but of euros
    assert answered_kind("How far does an e-bike go?", "It lasts for about 60 km.") == "number"
    assert answered_kind("How far does an e-bike go?", "It costs €32 a day.") is None


def test_terms_are_stems_with_synonyms_and_compounds():
    assert terms("How many calories?", implied=False) == terms("kcal", implied=False)
    assert set(terms("When does it shut?")) == set(terms("closing"))
    assert terms("yearly") == terms("annual") == terms("years")
    assert "ebik" in terms("an E-bike") and "ebik" not in terms("a city bike")
    assert terms("Café") == terms("cafe")


def test_a_text_covers_days_it_does_not_name():
    assert set(terms("Saturday")) & set(implied_days("Tuesday to Saturday 10:00 – 15:00"))
    assert set(implied_days("Monday to Friday")) >= set(terms("wednesday weekday"))
    assert set(implied_days("until 11:00 at weekends")) >= set(terms("saturday sunday"))
    wrapped = terms("friday saturday sunday monday weekday weekend", implied=False)
    assert set(implied_days("Friday to Monday")) == set(wrapped)
    assert not set(terms("weekend", implied=False)) & set(terms("monday", implied=False))


def test_a_search_pattern_matches_words_starting_with_the_term_or_a_synonym_whatever_the_case():
    pattern = re.compile(search_pattern(terms("calories", implied=False)[0]))
    assert pattern.search("910 KCAL") and pattern.search("Calories:") and pattern.search("Energy")
    assert not re.compile(search_pattern("art")).search("Restart it")
    assert re.compile(search_pattern(terms("cafe")[0])).search("the Harbour Café")
    assert re.compile(search_pattern(terms("saturday")[0])).search("open at weekends")


def test_table_rows_are_written_out_with_their_header():
    lines = [
        "| Dish | Price | Energy |",
        "|---|:-:|---|",
        "| Veggie burger | €11.40 | 910 kcal |",
        "| Soup | €5.80 | |",
    ]
    assert rows(lines) == [
        "Dish: Veggie burger, Price: €11.40, Energy: 910 kcal.",
        "Dish: Soup, Price: €5.80.",
    ]
    assert rows(["| a | b |", "| c | d |"]) == ["a, b.", "c, d."]  # no header


def test_lines_of_labels_and_values_are_read_one_by_one():
    found = segments("## Hours\n\nMonday to Friday: 06:45 – 17:30\nSaturday: 07:00 – 13:00\n")
    assert [s.text for s in found if s.kind == "prose"] == [
        "Monday to Friday: 06:45 – 17:30",
        "Saturday: 07:00 – 13:00",
    ]
    assert len({s.block for s in found}) == 3


def test_a_follow_up_borrows_the_earlier_questions_words_it_points_back_to():
    earlier = "When does the Riverside Pool open on weekdays?"
    assert (
        standalone("And on Saturdays?", earlier) == "And on Saturdays? Riverside Pool open"
    )  # weekdays replaced
    assert standalone("What about the brown one?", "When is the grey bin collected?") == (
        "What about the brown one? bin collected"
    )
    # "city" qualified the bike the follow-up names anew
    assert (
        standalone("And an e-bike?", "What does a city bike cost at Pedal & Go?")
        == "And an e-bike? cost Pedal Go"
    )
    assert (
        standalone("Who is the head librarian?", earlier) == "Who is the head librarian?"
    )  # it stands alone
    assert standalone("And on Saturdays?", None) == "And on Saturdays?"


def test_what_points_back_and_a_chain_of_follow_ups():
    assert points_back("Is it open on Mondays?") and points_back("How much does a child pay there?")
    assert points_back("And tomorrow?") and not points_back("When does the museum open on Mondays?")
    chain = ["When does the Riverside Pool open on weekdays?", "And on Saturdays?"]
    assert previous_question(chain) == "And on Saturdays? Riverside Pool open"
    assert previous_question([]) is None


def test_slots_names_each_slot_the_terms_fill_in_the_order_met():
    found = terms(
        "Open Monday to Saturday, red and green bins in May; breakfast and dinner until winter", implied=False
    )
    found += ["unknown", "sunday", found[0]]
    expected: dict[int, set[str]] = {}
    for term in found:  # the definition: every slot tested for every term
        for i, slot in enumerate(SLOTS):
            if term in slot:
                expected.setdefault(i, set()).add(term)
    assert len(expected) >= 4
    assert list(slots(found).items()) == list(expected.items())
    assert slots(["unknown", "sourdough"]) == {}
