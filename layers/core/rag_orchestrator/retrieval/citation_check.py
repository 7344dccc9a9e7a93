"""Checking an answer's citations against the passages its prompt held: it may cite only those (docs/answers.md).

A citation `[source:documentId#chunkIndex]` (parsed with `domain.passages.CITATION`) to a passage that was
not in the context is removed, with the spaces before it. `CitationFilter` does the same to a stream of
text deltas, holding back only what could still grow into a citation, so the concatenated deltas equal
`strip_unknown` of the whole text.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from rag_orchestrator.domain.passages import CITATION, Key

_CITED = re.compile(r"[ \t]*" + CITATION.pattern)
# The tail of a text that more text could turn into a citation, with the spaces before it:
# " ", " [", "[sou", "[source:", "[source:doc", "[source:Support Gui", "[source:doc#", "[source:doc#12".
_OPEN_TAIL = re.compile(
    r"[ \t]*\[(?:s(?:o(?:u(?:r(?:c(?:e(?::(?:[^\]#\n]*(?:#\d*)?)?)?)?)?)?)?)?)?\Z|[ \t]+\Z"
)


def strip_unknown(text: str, allowed: Collection[Key]) -> tuple[str, list[Key]]:
    """The text without citations outside `allowed`, and the keys removed (in order)."""
    removed: list[Key] = []

    def keep(match: re.Match[str]) -> str:
        key = (match.group(1), int(match.group(2)))
        if key in allowed:
            return match.group(0)
        removed.append(key)
        return ""

    return _CITED.sub(keep, text), removed


class CitationFilter:
    """`strip_unknown` over text that arrives in pieces: feed() what came, flush() at the end."""

    def __init__(self, allowed: Collection[Key]) -> None:
        self.allowed = allowed
        self.removed: list[Key] = []
        self._pending = ""

    def feed(self, text: str) -> str:
        """The part of the text so far that no later text can change, already cleaned."""
        self._pending += text
        tail = _OPEN_TAIL.search(self._pending)
        cut = tail.start() if tail else len(self._pending)
        ready, self._pending = self._pending[:cut], self._pending[cut:]
        return self._clean(ready)

    def flush(self) -> str:
        ready, self._pending = self._pending, ""
        return self._clean(ready)

    def _clean(self, text: str) -> str:
        if not text:
            return ""
        clean, removed = strip_unknown(text, self.allowed)
        self.removed += removed
        return clean
