"""A passage read into the sentences that could be quoted from it, whatever the question: done once per
text and kept by whoever reads the same passages again (the local reranker keeps a bounded store of them).

Every sentence is one unless a rule of `sentence_rules` says it answers nothing by itself (headings, code,
lines of links, lead-ins ending with a colon, sentences the chunking cut); a table's rows are, each written
out with its header (`text/tables.py`). What depends on the question (a sentence that only repeats it) is
left to `sentence_picker`.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from rag_orchestrator.providers.sentence_rules import (
    context_of,
    example_after,
    heading_of,
    is_cut_off,
    unquotable,
)
from rag_orchestrator.text.sentences import Segment, segments
from rag_orchestrator.text.tables import rows
from rag_orchestrator.text.terms import terms
from rag_orchestrator.text.words import normalize


@dataclass(frozen=True, slots=True)
class Sentence:
    position: int  # among its passage's segments
    segment: Segment
    body: str  # the sentence (the command it introduces, a table row written out)
    context: str | None  # quoted with it: its list's lead-in, or the name its paragraph describes
    words: frozenset[str]
    around: frozenset[str]  # what it is read with: its document's title, heading, paragraph's first sentence
    heading: frozenset[str]  # the terms of its section's heading alone
    key: str | None = None  # its text normalized, to quote it once across passages (None: a table row)
    example: str | None = None  # the command it introduces
    # What scoring reads of it whatever the question (the kinds of fact it holds, its action), worked out
    # once: a sentence kept by `ReadPassages` is scored for every question that retrieves its passage.
    known: dict[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)


def read_passage(text: str, title: str = "", whole: bool = False) -> tuple[Sentence, ...]:
    """The passage's quotable sentences in order (`whole`: a whole text, whose ends the chunking never cut)."""
    parts = segments(text)
    around = _Around(title, parts)
    found: list[Sentence] = []
    table: list[Segment] = []
    for position, segment in enumerate([*parts, None]):
        if segment is not None and segment.kind == "table":
            table.append(segment)
            continue
        if table:
            first = position - len(table)
            lines = [text[s.start : s.end] for s in table]
            found += [
                Sentence(
                    first, table[0], row, None, frozenset(terms(row)), around.of(first), around.heading(first)
                )
                for row in rows(lines)
            ]
            table = []
        if segment is None:
            break
        example = example_after(segment, parts[position + 1] if position + 1 < len(parts) else None)
        cut = not whole and is_cut_off(segment, text, position == 0, position == len(parts) - 1)
        if cut or unquotable(segment, example):
            continue
        body = f"{segment.text} {example}" if example else segment.text
        context = context_of(parts, position)
        found.append(
            Sentence(
                position,
                segment,
                body,
                context,
                frozenset(terms(f"{context or ''} {body}")),
                around.of(position),
                around.heading(position),
                " ".join(normalize(segment.text).split()),
                example,
            )
        )
    return tuple(found)


class ReadPassages:
    """The sentences of the passages read last, at most `size` of them, each text read once."""

    def __init__(self, size: int = 2048) -> None:
        self.size = size
        self._read: OrderedDict[tuple[str, str, bool], tuple[Sentence, ...]] = OrderedDict()

    def of(self, text: str, title: str = "", whole: bool = False) -> tuple[Sentence, ...]:
        key = (text, title, whole)
        found = self._read.get(key)
        if found is None:
            found = self._read[key] = read_passage(text, title, whole)
            if len(self._read) > self.size:
                self._read.popitem(last=False)
        else:
            self._read.move_to_end(key)
        return found


class _Around:
    """The terms a passage's sentences are read with (its title, heading, paragraph's first sentence),
    each text read once however many sentences share it."""

    def __init__(self, title: str, parts: list[Segment]) -> None:
        self.parts = parts
        self.title = frozenset(terms(title))
        self._read: dict[str, frozenset[str]] = {}

    def of(self, position: int) -> frozenset[str]:
        segment = self.parts[position]
        opener = next((p.text for p in self.parts[:position] if p.block == segment.block), "")
        return self.title | self.heading(position) | self._terms(opener)

    def heading(self, position: int) -> frozenset[str]:
        return self._terms(heading_of(self.parts, position))

    def _terms(self, text: str) -> frozenset[str]:
        if text not in self._read:
            self._read[text] = frozenset(terms(text))
        return self._read[text]
