"""The quick paths of the sentence rules decide as the plain patterns do: `reads_as_code` with each
token's kind kept; `is_mostly_links`, a line's `is_link_only` and its table test looking for what a
match must hold before running the patterns.
The references are the rules as they were, over every sentence of the eval corpus, the dev stack's
sample documents and Python's own documentation topics, and over texts made to sit at each edge."""

from __future__ import annotations

import re
from functools import cache

import pytest

from devserver.sample import sample_documents
from eval.questions import corpus_documents
from rag_orchestrator.providers import sentence_rules
from rag_orchestrator.providers.sentence_rules import is_mostly_links, reads_as_code
from rag_orchestrator.text import sentences as lines
from rag_orchestrator.text.sentences import INLINE_CODE, is_link_only, line_kind, segments


def reads_as_code_reference(text: str) -> bool:
    tokens = [t for t in INLINE_CODE.sub("code", text).split() if not sentence_rules._FIGURE.match(t)]
    return len(tokens) > 1 and sum(bool(sentence_rules._PLAIN_WORD.match(t)) for t in tokens) * 2 <= len(
        tokens
    )


def is_mostly_links_reference(text: str) -> bool:
    visible = sentence_rules._URL.sub(" ", sentence_rules._LINK_TARGET.sub(r"\1", text))
    return visible != text and len(re.findall(r"[^\W\d_]{2,}", visible)) < 3


def is_link_only_reference(line: str) -> bool:
    rest = lines._LINK.sub(" ", line)
    rest = re.sub(
        r"^\s*\.\.\s+\|?[\w -]*\|?\s*(image|figure)::.*|^\s*:(target|alt|width|height):.*", " ", rest
    )
    return not re.search(r"[^\W\d_]{2,}", rest) and rest != line


def line_kind_reference(line: str) -> str | None:
    if lines._ATX_HEADING.match(line):
        return "heading"
    if lines._TABLE.search(line) or lines._UNDERLINE.match(line):
        return "table"
    if is_link_only_reference(line):
        return "link"
    if lines.is_code_like(line):
        return "code"
    return None


EDGES = [
    "",
    "word",
    "two words",
    "x = f(y) + g[z]",
    "`make test` runs the suite",
    "`a` `b` `c` d",
    "06:45 – 17:30 €4.90 (3.8+.) -- —",
    "See [the guide](https://example.com/guide) and [more](x).",
    "![diagram](img.png)",
    "`Sourdough <https://bakery.example>`_",
    "https://example.com",
    "www.example.com is ours",
    "Read docs.html or config.yaml or logo.svg or photo.jpeg",
    "a.yml",
    ".png alone",
    "[not a link] (apart)",
    "`_ private",
    "ftp://files.example.com/x",
    "HTTPX, HTTP/2 and 3.8+. are plain",
    "(\"quoted\") 'single' “curly” ‘ones’ *stars*",
    "a_b c_d e_f",
    "Sourdough loaf: €4.90",
    "Links: https://a.example https://b.example https://c.example",
    ".. image:: diagram.png",
    "  .. |logo| figure:: logo.svg",
    ":target: https://example.com",
    "   :alt: a diagram",
    "\u2003:width: 200px",
    "<https://example.com>",
    "| a | b |",
    "+---+---+",
    "x | y | z",
    "1 + 2 = 3",
    "=====",
    "# Heading",
    ">>> print(1)",
    "`a`, `b`",
]


@cache
def sentences() -> list[str]:
    texts = [d["text"] for d in [*corpus_documents(), *sample_documents()]]
    from pydoc_data.topics import topics

    texts += list(topics.values())
    found = [segment.text for text in texts for segment in segments(text)]
    found += [t for text in texts for t in text.splitlines()]
    return [*found, *EDGES]


def test_the_corpus_holds_links_code_and_figures():
    held = sentences()
    assert len(held) > 5000
    assert sum(map(is_mostly_links_reference, held)) > 10
    assert sum(map(reads_as_code_reference, held)) > 100
    assert sum(map(is_link_only_reference, held)) > 10
    assert {line_kind_reference(text) for text in held} == {"heading", "table", "link", "code", None}


@pytest.mark.parametrize(
    ("quick", "reference"),
    [
        (reads_as_code, reads_as_code_reference),
        (is_mostly_links, is_mostly_links_reference),
        (is_link_only, is_link_only_reference),
        (line_kind, line_kind_reference),
    ],
    ids=["reads_as_code", "is_mostly_links", "is_link_only", "line_kind"],
)
def test_a_quick_path_decides_as_the_patterns_do(quick, reference):
    for text in sentences():
        assert quick(text) == reference(text), text
    for text in sentences()[:2000]:  # again, each token's kind now kept
        assert quick(text) == reference(text), text
