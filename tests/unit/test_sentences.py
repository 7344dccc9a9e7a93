"""Segmenting passages into sentences with kinds and offsets, content words, and centred snippets."""

from __future__ import annotations

import pytest

from rag_orchestrator.text.sentences import segments
from rag_orchestrator.text.snippets import centre_snippet
from rag_orchestrator.text.words import content_words, stem


def kinds(text: str) -> list[tuple[str, str]]:
    return [(s.kind, s.text) for s in segments(text)]


def test_sentences_keep_offsets_into_the_original_text():
    text = "First sentence here.  Second one\nwraps a line! Third?\n\nA new paragraph."
    found = segments(text)
    assert [s.text for s in found] == [
        "First sentence here.",
        "Second one wraps a line!",
        "Third?",
        "A new paragraph.",
    ]
    assert [text[s.start : s.end] for s in found][1] == "Second one\nwraps a line!"
    assert [s.block for s in found] == [0, 0, 0, 1]


def test_abbreviations_do_not_end_a_sentence():
    assert [s.text for s in segments("Use a marker, e.g. Timeout. It wins.")] == [
        "Use a marker, e.g. Timeout.",
        "It wins.",
    ]


def test_headings_tables_code_and_links_are_told_apart():
    text = "\n".join(
        [
            "# Install",
            "",
            "Usage",
            "=====",
            "",
            "| variable | default |",
            "|---|---|",
            "| `PORT` | `8000` |",
            "",
            "```bash",
            "pip install thing",
            "```",
            "",
            "[![badge](https://img.shields.io/x.svg)](https://example.org)",
            "`thing --help`",
            "$ thing run",
            "Thing runs anywhere.",
        ]
    )
    assert kinds(text) == [
        ("heading", "# Install"),
        ("heading", "Usage"),
        ("table", "| variable | default |"),
        ("table", "|---|---|"),
        ("table", "| `PORT` | `8000` |"),
        ("code", "pip install thing"),
        ("link", "[![badge](https://img.shields.io/x.svg)](https://example.org)"),
        ("code", "`thing --help`"),
        ("code", "$ thing run"),
        ("prose", "Thing runs anywhere."),
    ]


def test_a_chunk_cut_inside_a_code_block_starts_as_code():
    text = "x = compute()\nprint(x)\n```\n\nThe result is printed."
    assert kinds(text) == [
        ("code", "x = compute()"),
        ("code", "print(x)"),
        ("prose", "The result is printed."),
    ]


def test_a_prompt_shows_fences_as_filtered_and_they_still_fence_code():
    text = "Run it:\n[filtered]\nthing serve --port 80\n[filtered]\nIt listens on port 80."
    assert [k for k, _ in kinds(text)] == ["prose", "code", "prose"]


def test_restructuredtext_literal_blocks_are_code():
    text = "Install it with::\n\n    pip install thing\n\nThen import it."
    assert kinds(text) == [
        ("prose", "Install it with::"),
        ("code", "pip install thing"),
        ("prose", "Then import it."),
    ]


def test_a_command_explained_by_its_comment_is_a_command():
    text = (
        "```bash\nmake dev    # run the whole stack locally\nmake test   # set up and run the whole suite ```"
    )
    assert kinds(text) == [
        ("command", "`make dev`: run the whole stack locally"),
        ("command", "`make test`: set up and run the whole suite"),
    ]


def test_list_items_are_sentences_of_their_own_without_their_markers():
    text = "Features:\n- Thread safety.\n- Connection\n  pooling.\n1. First step"
    assert kinds(text) == [
        ("prose", "Features:"),
        ("prose", "Thread safety."),
        ("prose", "Connection pooling."),
        ("prose", "First step"),
    ]
    joined = "Options: - `a=1`: the first. - `b=2`: the second."  # a long list the chunking joined
    assert [t for _, t in kinds(joined)] == ["Options: - `a=1`: the first.", "`b=2`: the second."]


def test_a_line_of_links_inside_a_paragraph_is_part_of_the_sentence():
    text = "For questions and answers, visit\n[StackOverflow](https://stackoverflow.com)\n(tagged pypdf)."
    assert kinds(text) == [
        (
            "prose",
            "For questions and answers, visit [StackOverflow](https://stackoverflow.com) (tagged pypdf).",
        )
    ]


def test_content_words_fold_case_accents_function_words_and_inflection():
    assert content_words("How do I run the Tests? Running tested configuración") == [
        "run",
        "test",
        "run",
        "test",
        "configu",
    ]
    assert stem("raised") == stem("raise") == stem("raises")
    assert stem("status") == "status" and stem("class") == "class"


CHUNK = (
    "## Storage\n\n"
    "The service keeps every conversation in a table. Messages are stored one item each. "
    "Old conversations move to S3 after thirty days, as JSON lines. "
    "Deleted conversations stay for a month. Their audit records stay for a year.\n\n"
    "## Limits\n\nA request body may not exceed one megabyte."
)


def test_snippet_centres_on_the_sentence_matching_the_query_with_offsets():
    snippet = centre_snippet(CHUNK, "when are old conversations moved to S3?", 120)
    assert "Old conversations move to S3 after thirty days" in snippet.text
    assert snippet.text == CHUNK[snippet.start : snippet.end]
    assert len(snippet.text) <= 120 and snippet.start > 0


def test_snippet_grows_with_neighbours_but_not_past_a_heading():
    snippet = centre_snippet(CHUNK, "how long do audit records stay?", 400)
    assert snippet.text.endswith("Their audit records stay for a year.")
    assert "Limits" not in snippet.text and "Storage" not in snippet.text
    assert snippet.text.startswith("The service keeps every conversation")


def test_snippet_without_a_match_is_the_start_of_the_text():
    snippet = centre_snippet(CHUNK, "sourdough", 40)
    assert (snippet.start, snippet.text) == (0, "## Storage\n\nThe service keeps every")


@pytest.mark.parametrize("query", ["", "the of and"])
def test_snippet_of_an_empty_query_is_the_start(query):
    assert centre_snippet("Short text.", query, 300).text == "Short text."


def test_a_sentence_longer_than_the_snippet_is_cut_around_the_match():
    long = "Intro words " * 30 + "the password rotates every ninety days " + "and more words " * 30 + "."
    snippet = centre_snippet(long, "how often does the password rotate?", 100)
    assert "password rotates every ninety days" in snippet.text
    assert len(snippet.text) <= 100 and snippet.text == long[snippet.start : snippet.end]


def test_a_text_read_again_gives_the_same_sentences_in_a_list_of_its_own():
    text = "Opening hours. The pool opens at 06:30.\n\n| Day | Hours |\n|---|---|\n| Sat | 08:00 |"
    first = segments(text)
    first.clear()  # what one reader does with its list is not what the next one gets
    again = segments(text)
    assert again and again == segments(text) and again is not segments(text)
    assert [s.kind for s in again] == ["prose", "prose", "table", "table", "table"]


def test_only_passage_sized_texts_are_kept():
    from rag_orchestrator.text import sentences

    long_text = "A sentence about the pool. " * (sentences.KEPT_CHARS // 20)
    kept = sentences._kept_segments.cache_info().currsize
    assert len(segments(long_text)) > 100
    assert sentences._kept_segments.cache_info().currsize == kept  # a whole attachment is read, not kept
    segments(f"A passage read at {kept}.")
    assert sentences._kept_segments.cache_info().currsize == min(kept + 1, 1024)
