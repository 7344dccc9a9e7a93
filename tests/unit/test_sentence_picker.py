"""The sentence picker: each rule that skips a sentence, scoring, merging and the answer it composes."""

from __future__ import annotations

import pytest

from rag_orchestrator.providers.sentence_picker import NOTHING_FOUND, Passage, compose_answer, pick
from rag_orchestrator.providers.sentence_rules import (
    context_of,
    example_after,
    is_cut_off,
    is_mostly_links,
    reads_as_code,
    refers_back,
    repeats_question,
    skip_reason,
    wants_steps,
)
from rag_orchestrator.providers.sentence_scoring import read_question
from rag_orchestrator.text.hashing import HashingEmbedder
from rag_orchestrator.text.sentences import Segment, segments
from rag_orchestrator.text.terms import terms


def one(text: str) -> Segment:
    [segment] = segments(text)
    return segment


# --- the rules, one by one ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("## Running the tests", "heading"),
        ("| `make test` | runs the suite |", "table"),
        ("```\nmake test\n```", "code"),
        ("[![build](https://ci.example.org/badge.svg)](https://ci.example.org)", "link"),
        ("`make test`", "code"),
        ("Install it with pip:", "lead-in"),
        ("raise Exception('foo').with_traceback(tb)", "code"),
        ("Docs: https://a.example.org/x and https://b.example.org/y", "link"),
    ],
)
def test_sentences_that_cannot_answer_are_skipped_with_their_reason(text, reason):
    [segment] = [s for s in segments(text)]
    assert skip_reason(segment, "How do I run the tests?") == reason


def test_a_sentence_that_answers_is_kept():
    assert skip_reason(one("Run make test to run the whole suite."), "How do I run the tests?") is None
    assert (
        skip_reason(one("`make test`: run the whole suite"), "How do I run the tests?") is None
    )  # a command


def test_a_line_repeating_the_question_is_skipped_but_a_statement_with_its_words_is_not():
    question = "How do I run the tests?"
    assert repeats_question(one('-d \'{"message": "How do I run the tests?"}\' please'), question)
    assert repeats_question(one("How can I run tests?"), question)  # an FAQ's question
    assert not repeats_question(one("Express shipping costs extra."), "Does express shipping cost extra?")
    assert skip_reason(one("Express shipping costs extra."), "Does express shipping cost extra?") is None


def test_a_long_sentence_ending_with_a_colon_may_answer_and_a_short_one_introduces():
    long = one("If the finally clause executes a return, the saved exception is discarded:")
    assert skip_reason(long, "What happens to the saved exception?") is None
    assert skip_reason(one("For example:"), "What happens?") == "lead-in"


def test_a_lead_in_followed_by_a_command_answers_with_it():
    lead_in, command = segments("To add HTTP/2 support, use:\n\n```shell\n$ pip install httpx[http2]\n```")
    assert example_after(lead_in, command) == "`pip install httpx[http2]`"
    assert skip_reason(lead_in, "How do I get HTTP/2?", example_after(lead_in, command)) is None
    not_a_command = segments("The result:\n\n```python\nx = {'a': 1}\n```")
    assert example_after(*not_a_command) is None


def test_a_sentence_is_read_with_its_lists_lead_in_or_the_name_its_paragraph_describes():
    listed = segments(
        "By default, `load_dotenv()` will:\n\n- Not override existing variables.\n- Read `.env`."
    )
    assert [context_of(listed, i) for i in range(3)] == [None, listed[0].text, listed[0].text]
    named = segments("### `unparse()`\n\nConvert a dictionary back into XML. It returns a string.")
    assert [context_of(named, i) for i in range(3)] == [None, "`unparse()`:", None]
    signature = segments("get(key[, default])\n\n   Return the value for *key*.")
    assert context_of(signature, 1) == "get(key[, default]):"
    plain = segments(
        "## Installation\n\nInstall it with pip.\n\nraise Exception('x').with_traceback(tb)\n\nIt chains."
    )
    assert [context_of(plain, i) for i in (1, 3)] == [None, None]


def test_sentences_the_chunking_cut_are_skipped():
    text = "continues from the chunk before. A whole sentence. To report it, please use the"
    first, whole, last = segments(text)
    assert is_cut_off(first, text, first=True, last=False)
    assert not is_cut_off(whole, text, first=False, last=False)
    assert is_cut_off(last, text, first=False, last=True)
    assert not is_cut_off(one("Ends well."), "Ends well.", first=True, last=True)


def test_code_like_text_and_link_heavy_text_are_recognised():
    assert reads_as_code("conn.send(h11.Request(method='GET', target='/'))")
    assert not reads_as_code("Install `httpx` with pip, then import it.")
    assert is_mostly_links("ch/x/actions/workflows/test.yml/badge.svg)](https://github.com/x/actions)")
    assert not is_mostly_links("Trusted by NASA for [Mars missions since 2020](https://github.com/readme)!")


def test_sentences_that_refer_back_and_questions_that_want_steps():
    assert refers_back(one("This means other features will not work."))
    assert not refers_back(one("Thread safety comes first."))
    assert wants_steps("How do I run the tests?") and wants_steps("how to install it")
    assert not wants_steps("How many tests are there?")


# --- scoring, merging, composing ------------------------------------------------------------------

README = Passage(
    "docs/README.md",
    0,
    "## Two commands\n\n```bash\nmake dev    # set up and run the whole stack locally\n"
    "make test   # set up and run the whole suite (unit, integration, packaging)\n```\n\n"
    "| variable | default |\n|---|---|\n| `TESTS` | `all` |\n\n"
    'Try it:\n\n```bash\ncurl -d \'{"message": "How do I run the tests?"}\' localhost:8000\n```',
)


def test_the_readme_question_is_answered_with_make_test_not_the_curl_line_or_a_heading():
    answer = compose_answer("How do I run the tests?", [README], HashingEmbedder().embed_batch)
    assert answer.startswith("`make test`: set up and run the whole suite")
    assert answer.endswith("[source:docs/README.md#0]")
    assert "curl" not in answer and "Two commands" not in answer and "|" not in answer


def test_adjacent_sentences_of_one_paragraph_merge_into_one_quote_with_one_citation():
    passage = Passage(
        "timeout",
        3,
        "The thread method starts a timer for each test. The downside is that test runs are not completed. "
        "This means JUnit XML output will not function normally.\n\nUnrelated paragraph about JUnit XML.",
    )
    quotes = pick("Why is JUnit XML output missing?", [passage])
    assert quotes == [
        (
            passage,
            "The downside is that test runs are not completed. This means JUnit XML output will not function normally.",
        )
    ]


def test_a_list_item_is_quoted_with_its_lead_in_said_once():
    passage = Passage(
        "dotenv",
        0,
        "By default, `load_dotenv()` will:\n\n- Look for a `.env` file.\n"
        "- **Not override** existing environment variables (`override=False`).\n\nOther text.",
    )
    [(_, text)] = pick("Does load_dotenv override variables already set in the environment?", [passage])
    assert text == (
        "By default, `load_dotenv()` will: **Not override** existing environment variables (`override=False`)."
    )


def test_a_second_passage_that_answers_nearly_as_well_is_quoted_too():
    passages = [
        Passage("a", 0, "Refunds are paid by bank transfer."),
        Passage("b", 2, "Refunds on gift cards are paid as store credit."),
        Passage("c", 1, "Shipping takes two days."),
    ]
    answer = compose_answer("How are refunds paid?", passages)
    assert answer.split("\n\n") == [
        "Refunds are paid by bank transfer. [source:a#0]",
        "Refunds on gift cards are paid as store credit. [source:b#2]",
    ]


def test_nothing_answers_when_no_sentence_shares_words_or_meaning():
    passages = [Passage("a", 0, "Refunds are paid within 14 days.")]
    assert compose_answer("Which colour is the logo?", passages) == NOTHING_FOUND
    assert compose_answer("Which colour is the logo?", []) == NOTHING_FOUND
    assert (
        compose_answer("How do I run the tests?", [Passage("h", 0, "# Tests\n\n| a | b |")]) == NOTHING_FOUND
    )


def test_embedding_similarity_decides_between_sentences_sharing_as_many_words():
    passage = Passage("d", 0, "The pool opens at 09:00 on weekdays. The pool shuts at 18:00 on weekdays.")

    def towards(word: str):
        def embed(texts: list[str]) -> list[list[float]]:
            return [[1.0, 0.0] if word in t or t.endswith("?") else [0.0, 1.0] for t in texts]

        return embed

    question = "What time is the pool closed on weekdays?"
    assert pick(question, [passage], towards("shuts")) == [(passage, "The pool shuts at 18:00 on weekdays.")]
    assert pick(question, [passage], towards("opens")) == [(passage, "The pool opens at 09:00 on weekdays.")]


def test_the_same_sentence_in_overlapping_chunks_is_quoted_once():
    passages = [
        Passage("readme", 0, "Run make test to run the whole suite."),
        Passage("readme", 1, "Run make test to run the whole suite. Make dev starts the stack."),
    ]
    assert compose_answer("How do I run the test suite?", passages).count("whole suite") == 1


def test_answers_are_deterministic():
    question = "How do I run the tests?"
    answers = {compose_answer(question, [README], HashingEmbedder().embed_batch) for _ in range(3)}
    assert len(answers) == 1


# --- what a question asks for, tables, links, honesty ---------------------------------------------

MENU = Passage(
    "cafe",
    1,
    "## Menu\n\n| Dish | Price | Energy |\n|---|---|---|\n| Lentil soup | €5.80 | 390 kcal |\n"
    "| Veggie burger | €11.40 | 910 kcal |\n\nAllergen list [online](https://example.org/allergens).",
    title="Harbour Café",
)
HOURS = Passage(
    "cafe",
    0,
    "# Harbour Café\n\nThe café sits on the quay at 4 Mill Lane. We are open from 07:30 to 18:00 on weekdays. "
    "On Saturdays the doors open at 08:30 and we close at 16:00.\n\nIt is run by Marta Okafor.",
    title="Harbour Café",
)


def test_a_fact_in_a_table_row_is_quoted_with_its_header():
    answer = compose_answer("How many calories does the veggie burger have?", [HOURS, MENU])
    assert answer == "Dish: Veggie burger, Price: €11.40, Energy: 910 kcal. [source:cafe#1]"


def test_the_sentence_holding_the_kind_of_fact_asked_for_leads():
    assert compose_answer("Until when is the café open on Saturdays?", [HOURS]).startswith(
        "On Saturdays the doors open at 08:30 and we close at 16:00."
    )
    assert compose_answer("Who runs the café?", [HOURS]).startswith("It is run by Marta Okafor.")
    assert compose_answer("Where is the Harbour Café?", [HOURS]).startswith(
        "The café sits on the quay at 4 Mill Lane."
    )


def test_a_sentence_about_another_day_than_the_one_asked_does_not_answer():
    answer = compose_answer("When does the café open on weekdays?", [HOURS])
    assert answer.startswith("We are open from 07:30 to 18:00 on weekdays.")


def test_an_answer_quotes_a_markdown_link_as_its_text_and_address():
    answer = compose_answer("Where can I read the allergen list online?", [MENU])
    assert "Allergen list online (https://example.org/allergens)." in answer and "](" not in answer


def test_nothing_is_found_when_the_question_names_what_no_passage_knows():
    assert compose_answer("Who is the mayor of the town?", [HOURS, MENU]) == NOTHING_FOUND
    assert compose_answer("How much is a cinema ticket?", [HOURS, MENU]) == NOTHING_FOUND


def test_nothing_is_found_when_no_sentence_holds_the_kind_of_fact_asked_for():
    assert compose_answer("What is the phone number of the Harbour Café?", [HOURS, MENU]) == NOTHING_FOUND


def test_a_follow_up_is_read_with_the_question_before_it():
    question = read_question("And on Saturdays?", "When does the Harbour Café open on weekdays?")
    assert question.kinds[0] == "time"  # from the earlier question: the follow-up names no kind of its own
    assert compose_answer(question, [HOURS]).startswith("On Saturdays the doors open at 08:30")


def test_a_sentence_holding_the_fact_asked_for_leads_though_it_refers_back():
    answer = compose_answer("Who runs the café?", [HOURS])
    assert answer.startswith("It is run by Marta Okafor.")  # not after "The café sits on the quay…"


def test_a_sentence_from_a_document_about_another_name_answers_less():
    other = Passage("bakery", 0, "We close at 17:30 on weekdays.", title="Hilltop Bakery")
    answer = compose_answer("When does the Harbour Café close on weekdays?", [other, HOURS])
    assert answer.startswith("We are open from 07:30 to 18:00 on weekdays.")


def test_a_yes_or_no_question_about_what_no_passage_mentions_is_not_answered():
    assert compose_answer("Does the Harbour Café have a gift shop?", [HOURS, MENU]) == NOTHING_FOUND


def test_how_to_is_answered_with_the_action_about_it():
    passages = [
        Passage(
            "streams",
            0,
            "## Cancel: `POST /api/v1/turns/{turnId}/cancel`\n\nServed by the REST API; no body.\n\n"
            "A running turn reads the flag the cancel route sets, twice a second.",
        )
    ]
    answer = compose_answer("How do I cancel a running turn?", passages)
    assert answer.startswith("Cancel: `POST /api/v1/turns/{turnId}/cancel`: Served by the REST API; no body.")


def test_a_fact_of_the_kind_asked_for_must_be_beside_what_the_question_is_about():
    counter = Passage(
        "bakery",
        0,
        "- Croissant: €1.70\n- Cinnamon bun: €2.30, about 350 kcal\n\nBread goes to the food bank.",
        title="Hilltop Bakery",
    )
    assert compose_answer("How many calories does a cinnamon bun have?", [counter]).startswith(
        "Cinnamon bun:"
    )
    assert compose_answer("How many calories does a croissant have?", [counter]) == NOTHING_FOUND


def test_memory_results_quote_what_was_said_with_its_date_and_never_an_earlier_answer():
    from rag_orchestrator.domain.passage_formats import format_passages
    from rag_orchestrator.domain.passages import Passage as Found
    from rag_orchestrator.providers.extractive import parse_results

    def found(kind: str, title: str, text: str, index: int) -> Found:
        return Found(
            document_id="conversation:c1", title=title, chunk_index=index, score=0.9, text=text, kind=kind
        )

    results = format_passages(
        [
            found(
                "answered", "An earlier answer of 2026-11-20, may be outdated", "The vault opens at seven.", 3
            ),
            found("said", "You said on 2026-11-20", "My vault code is 8080.", 2),
        ]
    )
    passages = parse_results(results)
    assert [(p.chunk_index, p.label) for p in passages] == [(2, "You said on 2026-11-20: ")]
    assert "seven" not in compose_answer("When does the vault open?", passages)
    assert compose_answer("What is my vault code?", passages) == (
        "You said on 2026-11-20: My vault code is 8080. [source:conversation:c1#2]"
    )


POOL = Passage(
    "pool",
    0,
    "# Riverside Pool\n\nThe Riverside Pool has six lanes and a learner pool. An adult swim costs €5.50 and a "
    "child pays €3.20.\n\nThe manager of the Riverside Pool is Priya Nair.",
    title="Riverside Pool",
)


def test_a_sentence_that_shares_only_the_questions_names_does_not_answer():
    embed = HashingEmbedder().embed_batch
    assert compose_answer("How much is parking at the Riverside Pool?", [POOL], embed) == NOTHING_FOUND
    assert compose_answer("When does the Riverside Pool sauna open?", [POOL], embed) == NOTHING_FOUND
    assert "€5.50" in compose_answer("How much is an adult swim at the Riverside Pool?", [POOL], embed)


def test_the_fact_asked_for_in_other_words_still_answers():
    # "in charge" is not said, but a person is, with most of the rest of the question
    answer = compose_answer("Who is in charge of the Riverside Pool?", [POOL], HashingEmbedder().embed_batch)
    assert answer.startswith("The manager of the Riverside Pool is Priya Nair.")
    assert read_question("How much is parking at the Riverside Pool?").asked_terms() == frozenset(
        terms("parking")
    )
