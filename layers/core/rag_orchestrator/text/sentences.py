"""A chunk of Markdown, reStructuredText or plain text cut into sentences, each with its kind and offsets.

Prose is what answers; headings, table rows, code and lines of links only are kept apart (with their
kind) so that a reader can skip them. Offsets index the original text: `text[start:end]` is the
sentence as written, `Segment.text` the same with its whitespace collapsed and a list marker removed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

Kind = Literal["prose", "command", "heading", "table", "code", "link"]

# The answer endpoint's prompt shows a fence as "[filtered]" (prompt-injection shapes are neutralised).
_FENCE = re.compile(r"^\s*(```|~~~|\[filtered\](?=\s*$))\s*([\w+-]*)")
_ATX_HEADING = re.compile(r"^\s{0,3}#{1,6}(\s|$)")
_UNDERLINE = re.compile(r"^\s*([=\-~^*+#`'\".:])\1{2,}\s*$")
_TABLE = re.compile(r"^\s*(\||\+[-=+]{2,})|\S\s+\|\s+\S.*\|")
_LIST_ITEM = re.compile(r"^(\s*)([-*+•]|\d{1,3}[.)])\s+")
_TRAILING_FENCE = re.compile(r"\s*(```|~~~|\[filtered\])\s*$")  # chunking may join a fence to its last line
_INNER_MARKER = re.compile(r"[-*+•]\s+")
PROMPT = re.compile(r"^\s*(\$|>>>|\.\.\.|%|#!)(\s|$)")
_DIRECTIVE = re.compile(r"^\s*\.\.\s+[\w:-]+::|^\s*:[\w-]+:\s")
_CODE_START = re.compile(
    r"^\s*(import \w|from [\w.]+ import |def \w|class \w+[(:]|async def |@\w|pip install |curl |"
    r"python3? -|uv |npm |make \w|export \w+=|\w+\s*=\s*[\w\[{(\"'])"
)
_LINK = re.compile(r"!?\[[^\]]*\]\([^)]*\)|<https?://[^>]*>|https?://\S+|`[^`]*<[^>]+>`_")
_IMAGE_OPTION = re.compile(r"^\s*\.\.\s+\|?[\w -]*\|?\s*(image|figure)::.*|^\s*:(target|alt|width|height):.*")
_WORD = re.compile(r"[^\W\d_]{2,}")
INLINE_CODE = re.compile(r"``?[^`]+``?")
# A sentence ends at . ! or ? (perhaps closed by quotes or brackets) before a space and a capital,
# digit, quote, bracket or backtick, or before a list marker (chunking joins a long list's lines);
# "e.g. Foo" and "etc. Then" are not ends.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]*_]*\s+(?=(?:[-*+•]\s+)?[\"'(\[`*_]*[A-Z0-9`])")
_ABBREVIATIONS = frozenset({"e.g", "i.e", "etc", "vs", "cf", "mr", "mrs", "dr", "no", "fig", "approx", "ca"})
# "Saturday: 07:00 – 13:00" on lines of their own: each line is read alone, like a list item.
_LABELLED_LINE = re.compile(r"^\s*[^\s:][^:.!?]{0,40}:\s+\S.{0,100}$")
# `make test   # run the whole suite`: a command explained by its comment says how to do something.
_COMMENTED_COMMAND = re.compile(r"^\s*(?:\$\s+)?([^#\s][^#]*?)\s{2,}#\s+(.*[^\W\d_]{2,}.*\s.*\s.*)$")


@dataclass(frozen=True, slots=True)
class Segment:
    start: int
    end: int
    text: str
    kind: Kind
    block: int  # sentences of one paragraph or list item share it
    item: bool = False  # part of a list item


@dataclass(slots=True)
class _Line:
    start: int
    end: int
    raw: str


def _lines(text: str) -> list[_Line]:
    found, offset = [], 0
    for raw in text.splitlines(keepends=True):
        found.append(_Line(offset, offset + len(raw.rstrip("\r\n")), raw.rstrip("\r\n")))
        offset += len(raw)
    return found


def _starts_inside_code(lines: list[_Line]) -> bool:
    """A chunk cut from the middle of a fenced block: an odd number of fences, the first one bare."""
    fences = [m for line in lines if (m := _FENCE.match(line.raw))]
    return len(fences) % 2 == 1 and not fences[0].group(2)


def is_link_only(line: str) -> bool:
    if not _may_link(line):  # neither pattern can match: nothing is taken away
        return False
    rest = _IMAGE_OPTION.sub(" ", _LINK.sub(" ", line))
    return not _WORD.search(rest) and rest != line


def _may_link(line: str) -> bool:
    """What a match of `_LINK` or `_IMAGE_OPTION` holds, looked for without the patterns (a line of a
    passage is read for each candidate the reranker has not read before)."""
    return "](" in line or "http" in line or "`_" in line or "::" in line or line.lstrip().startswith(":")


def is_code_like(line: str) -> bool:
    """A shell or REPL prompt, a statement, a directive, or a line of inline code and punctuation only."""
    if PROMPT.match(line) or _CODE_START.match(line) or _DIRECTIVE.match(line):
        return True
    return "`" in line and not _WORD.search(INLINE_CODE.sub(" ", line))


def line_kind(line: str) -> Kind | None:
    """The kind a single line has by itself (None: prose, or part of a paragraph)."""
    if _ATX_HEADING.match(line):
        return "heading"
    if (("|" in line or "+" in line) and _TABLE.search(line)) or _UNDERLINE.match(line):
        return "table"
    if is_link_only(line):
        return "link"
    if is_code_like(line):
        return "code"
    return None


def _sentence_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    spans, begin = [], start
    for match in _SENTENCE_END.finditer(text, start, end):
        words = text[begin : match.start()].split()
        last = words[-1].rstrip(".!?\"')]*_").lower() if words else ""
        if last in _ABBREVIATIONS or (len(last) == 1 and last.isalpha()):
            continue
        spans.append((begin, match.start()))
        begin = match.end()
    spans.append((begin, end))
    return [(s, e) for s, e in spans if text[s:e].strip()]


def segments(text: str) -> list[Segment]:
    """The sentences of `text` in order, with their kind; blank lines and fences themselves yield none.

    Kept for the passage-sized texts read last: a turn reads the same passages for the reranker and
    again for its sources' snippets, and the knowledge base's passages come back turn after turn."""
    return list(_kept_segments(text) if len(text) <= KEPT_CHARS else _segments(text))


KEPT_CHARS = 8000  # the largest CHUNK_SIZE: longer texts (whole attachments, long messages) are not kept


@lru_cache(maxsize=1024)
def _kept_segments(text: str) -> tuple[Segment, ...]:
    return _segments(text)


def _segments(text: str) -> tuple[Segment, ...]:
    lines = _lines(text)
    found: list[Segment] = []
    in_code = _starts_inside_code(lines)
    literal_indent: int | None = None  # inside a reStructuredText literal block (after "::") or indented code
    paragraph: list[_Line] = []
    block = 0

    def flush() -> None:
        nonlocal block
        if len(paragraph) > 1 and all(_LABELLED_LINE.match(line.raw) for line in paragraph):
            lines = list(paragraph)
            paragraph.clear()
            for line in lines:
                begin = line.start + len(line.raw) - len(line.raw.lstrip())
                found.append(Segment(begin, line.end, " ".join(line.raw.split()), "prose", block))
                block += 1
            return
        if paragraph:
            first, last = paragraph[0], paragraph[-1]
            marker = _LIST_ITEM.match(first.raw)
            begin = first.start + (marker.end() if marker else len(first.raw) - len(first.raw.lstrip()))
            item = marker is not None
            for s, e in _sentence_spans(text, begin, last.end):
                if s > begin and (inner := _INNER_MARKER.match(text, s)):
                    s, item = inner.end(), True
                found.append(Segment(s, e, " ".join(text[s:e].split()), "prose", block, item))
            block += 1
            paragraph.clear()

    def single(line: _Line, kind: Kind) -> None:
        nonlocal block
        flush()
        stripped = " ".join(line.raw.split())
        if kind == "code" and (commented := _COMMENTED_COMMAND.match(_TRAILING_FENCE.sub("", line.raw))):
            kind, stripped = (
                "command",
                f"`{commented.group(1).strip()}`: {' '.join(commented.group(2).split())}",
            )
        begin = line.start + len(line.raw) - len(line.raw.lstrip())
        found.append(Segment(begin, line.end, stripped, kind, block))
        block += 1

    after_list = False  # the last paragraph was a list item: indented lines continue it
    for i, line in enumerate(lines):
        indent = len(line.raw) - len(line.raw.lstrip())
        if _FENCE.match(line.raw):
            flush()
            in_code = not in_code
            continue
        if not line.raw.strip():
            if paragraph and paragraph[-1].raw.rstrip().endswith("::"):
                literal_indent = len(paragraph[0].raw) - len(paragraph[0].raw.lstrip())
            if paragraph:
                after_list = bool(_LIST_ITEM.match(paragraph[0].raw))
            flush()
            continue
        if literal_indent is not None:
            if indent > literal_indent:
                single(line, "code")
                continue
            literal_indent = None
        if in_code or (indent >= 4 and not paragraph and not after_list and not _LIST_ITEM.match(line.raw)):
            single(line, "code")
            continue
        following = lines[i + 1].raw if i + 1 < len(lines) else ""
        if _UNDERLINE.match(following) and not paragraph and len(line.raw.strip()) <= len(following) + 2:
            single(line, "heading")
            continue
        kind = line_kind(line.raw)
        if kind == "table" and _UNDERLINE.match(line.raw):
            flush()  # a heading's underline or a rule: nothing to read
            continue
        # Inside a paragraph a line of links or inline code is wrapped prose ("visit\n[StackOverflow](…)").
        if kind is not None and not (kind in ("code", "link") and paragraph and not PROMPT.match(line.raw)):
            single(line, kind)
            continue
        if _LIST_ITEM.match(line.raw):
            flush()
            after_list = True
        paragraph.append(line)
    flush()
    return tuple(found)
