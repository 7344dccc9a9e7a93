"""The part of a passage worth showing for a query: the sentences that share its words, and their neighbours."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from rag_orchestrator.text.sentences import KEPT_CHARS, Segment, segments
from rag_orchestrator.text.words import content_words


@dataclass(frozen=True, slots=True)
class Snippet:
    text: str  # exactly source[start:end]
    start: int
    end: int


def _head(text: str, max_chars: int) -> Snippet:
    start = len(text) - len(text.lstrip())
    end = min(len(text.rstrip()), start + max_chars)
    if end < len(text.rstrip()):
        space = text.rfind(" ", start, end + 1)
        end = space if space > start + max_chars // 2 else end
    end = len(text[:end].rstrip())
    return Snippet(text[start:end], start, end)


def _cut(text: str, segment: Segment, asked: set[str], max_chars: int) -> Snippet:
    """A window of a sentence longer than max_chars, starting a little before its first matching word."""
    first = segment.start
    position = segment.start
    for word in text[segment.start : segment.end].split():
        position = text.index(word, position)
        if set(content_words(word)) & asked:
            first = position
            break
        position += len(word)
    start = max(segment.start, first - max_chars // 4)
    if start > segment.start:
        space = text.find(" ", start, first + 1)
        start = space + 1 if space >= 0 else start
    end = min(segment.end, start + max_chars)
    if end < segment.end:
        space = text.rfind(" ", start, end + 1)
        end = space if space > start else end
    end = len(text[:end].rstrip())
    return Snippet(text[start:end], start, end)


def _read(text: str) -> tuple[tuple[Segment, ...], tuple[frozenset[str], ...]]:
    """The text's sentences and the content words of each, whatever the query."""
    found = tuple(segments(text))
    return found, tuple(frozenset(content_words(s.text)) for s in found)


# Kept for the passages shown last, which come back as sources turn after turn.
_kept = lru_cache(maxsize=1024)(_read)


def centre_snippet(text: str, query: str, max_chars: int) -> Snippet:
    """At most max_chars of `text` around the sentence sharing most words with the query; its start if none."""
    asked = set(content_words(query))
    found, words = _kept(text) if len(text) <= KEPT_CHARS else _read(text)
    scores = [
        len(asked & said) + (0.5 if s.kind == "prose" else 0.0) for s, said in zip(found, words, strict=True)
    ]
    if not found or max(scores) < 1:
        return _head(text, max_chars)
    best = scores.index(max(scores))
    if found[best].end - found[best].start > max_chars:
        return _cut(text, found[best], asked, max_chars)
    low = high = best
    while True:
        # Grow towards the better-scoring neighbour first, the following one on a tie.
        # Headings end a section: a snippet stops before them.
        options = [i for i in (high + 1, low - 1) if 0 <= i < len(found) and found[i].kind != "heading"]
        options.sort(key=lambda i: -scores[i])
        grown = False
        for i in options:
            start, end = found[min(low, i)].start, found[max(high, i)].end
            if end - start <= max_chars:
                low, high = min(low, i), max(high, i)
                grown = True
                break
        if not grown:
            break
    start, end = found[low].start, found[high].end
    return Snippet(text[start:end], start, end)
