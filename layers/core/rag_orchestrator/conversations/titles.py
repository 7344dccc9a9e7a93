"""Conversation titles: the lower-cased words a title is searched by, a query's words, and a phrase
cut from a question (the title when no model writes one).

`titleSearch` holds the title's words, lower-cased and accents folded, each preceded by a space: a
query word `w` matches a title word that begins with it where `contains(titleSearch, " w")` holds,
which DynamoDB evaluates itself as a FilterExpression on the caller's index (dynamo_listing.py).
"""

from __future__ import annotations

import re

from rag_orchestrator.domain.conversations import MAX_TITLE_CHARS
from rag_orchestrator.errors import BadRequest
from rag_orchestrator.text.words import normalize

PHRASE_CHARS = 60  # a title cut from a question: about one line of a conversation list
MAX_QUERY_WORDS = 8
MAX_QUERY_CHARS = 200
_WORD = re.compile(r"[^\W_]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def search_words(text: str) -> list[str]:
    return _WORD.findall(normalize(text))


def title_search(title: str) -> str:
    """The `titleSearch` attribute of a title."""
    return "".join(f" {word}" for word in search_words(title))


def query_words(query: str) -> list[str]:
    """The words a `q` searches for (each must begin a word of the title); 400 when there are none."""
    if len(query) > MAX_QUERY_CHARS:
        raise BadRequest(f"q must be at most {MAX_QUERY_CHARS} characters")
    words = list(dict.fromkeys(search_words(query)))
    if not words or len(words) > MAX_QUERY_WORDS:
        raise BadRequest(f"q must hold between 1 and {MAX_QUERY_WORDS} words")
    return words


def matches(title: str | None, words: list[str]) -> bool:
    """What the FilterExpression decides, for stores that filter in memory."""
    held = title_search(title or "")
    return all(f" {word}" in held for word in words)


def clean_title(text: str) -> str | None:
    """A model's reply as a title: its first line, unquoted, without a closing full stop; None if empty."""
    line = next((line for line in text.strip().splitlines() if line.strip()), "")
    line = re.sub(r"^(title\s*:\s*)", "", line.strip(), flags=re.IGNORECASE)
    line = " ".join(line.strip().strip("\"'“”*#`").split()).rstrip(".")
    return cut(line, MAX_TITLE_CHARS) or None


def phrase_of(question: str) -> str | None:
    """The question's first sentence, cut at a word boundary to about a line; None if it has no words."""
    text = " ".join(question.split())
    first = _SENTENCE_END.split(text, maxsplit=1)[0]
    phrase = cut(first, PHRASE_CHARS).rstrip(" ,;:-")
    if not search_words(phrase):
        return None
    return phrase[:1].upper() + phrase[1:]


def cut(text: str, limit: int) -> str:
    """`text` within `limit` characters, cut after a whole word where it is longer (with an ellipsis)."""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    if " " in head:
        head = head.rsplit(" ", 1)[0]
    return head.rstrip(" ,;:-") + "…"
