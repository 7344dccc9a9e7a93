"""Overlapping chunks cut on paragraph, then sentence, then word boundaries; each with its metadata."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime

from rag_orchestrator.domain.modalities import TEXT
from rag_orchestrator.sanitize import (
    MAX_SOURCE,
    MAX_TITLE,
    sanitize_metadata,
    sanitize_tags,
    strip_control,
)

_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
# A sentence ends at . ! ? or … (optionally closed by quotes or brackets) followed by space,
# or at a single line break (lists, headings).
_SENTENCE_END = re.compile(r"(?<=[.!?…。])[\"')\]]*\s+|\n")


@dataclass(frozen=True, slots=True)
class Chunk:
    id: str
    text: str
    metadata: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Unit:
    text: str
    starts_paragraph: bool
    starts_line: bool = False  # a line of its own in its paragraph (a table row, a list item, "Sat: 9–13")


def chunk_id(document_id: str, chunk_index: int) -> str:
    return f"{document_id}#{chunk_index}"


def _split_long(text: str, size: int) -> list[str]:
    """Pieces of at most `size` chars, cut at the last space before the limit where there is one."""
    pieces = []
    while len(text) > size:
        cut = text.rfind(" ", 0, size + 1)
        cut = cut if cut > size // 2 else size
        pieces.append(text[:cut].strip())
        text = text[cut:].strip()
    return [*pieces, text] if text else pieces


def _sentences(paragraph: str) -> list[tuple[str, bool]]:
    """The paragraph's sentences, each with whether it starts a line: rows and items keep their lines."""
    found = []
    for number, line in enumerate(paragraph.split("\n")):
        pieces = [piece.strip() for piece in _SENTENCE_END.split(line) if piece and piece.strip()]
        found += [(piece, number > 0 and k == 0) for k, piece in enumerate(pieces)]
    return found


def _units(text: str, size: int, overlap: int) -> list[_Unit]:
    """Whole paragraphs where they fit; else their sentences; a sentence over `size` is cut at words."""
    # Pieces cut mid-sentence leave room for the overlap, which matters most there.
    word_piece = max(size - overlap, size // 2)
    units: list[_Unit] = []
    for paragraph in _PARAGRAPH_BREAK.split(text):
        paragraph = paragraph.strip()
        if not paragraph:
            continue
        pieces = [(paragraph, False)] if len(paragraph) <= size else _sentences(paragraph)
        parts = [
            (part, starts_line and j == 0)
            for piece, starts_line in pieces
            for j, part in enumerate([piece] if len(piece) <= size else _split_long(piece, word_piece))
        ]
        units.extend(_Unit(part, i == 0, starts_line) for i, (part, starts_line) in enumerate(parts))
    return units


def _render(units: list[_Unit]) -> str:
    parts = []
    for i, unit in enumerate(units):
        if i:
            parts.append("\n\n" if unit.starts_paragraph else "\n" if unit.starts_line else " ")
        parts.append(unit.text)
    return "".join(parts)


def _overlap(previous: list[_Unit], overlap: int) -> list[_Unit]:
    """The end of the previous chunk, at most `overlap` chars: whole sentences, else its last words."""
    if overlap <= 0 or not previous:
        return []
    tail: list[_Unit] = []
    for unit in reversed(previous):
        sentences = _sentences(unit.text) if len(unit.text) > overlap else [(unit.text, False)]
        for k in range(len(sentences) - 1, -1, -1):
            text, starts_line = sentences[k]
            candidate = _Unit(
                text, unit.starts_paragraph and k == 0, starts_line or (unit.starts_line and k == 0)
            )
            if len(_render([candidate, *tail])) > overlap:
                return tail or _last_words(text, overlap)
            tail.insert(0, candidate)
    return tail


def _last_words(sentence: str, overlap: int) -> list[_Unit]:
    words = sentence[-overlap:]
    space = words.find(" ")
    words = words[space + 1 :] if 0 <= space < len(words) - 1 else words
    return [_Unit(words, False)] if words.strip() else []


def split_text(text: str, size: int, overlap: int) -> list[str]:
    """Chunks of at most `size` chars; each after the first repeats up to `overlap` chars of the one before."""
    units = _units(strip_control(text), size, overlap)
    chunks: list[str] = []
    current: list[_Unit] = []
    fresh = False  # whether `current` holds anything beyond the overlap carried from the last chunk
    for unit in units:
        if fresh and len(_render([*current, unit])) > size:
            chunks.append(_render(current))
            current = _overlap(current, overlap)
            while current and len(_render([*current, unit])) > size:
                current = current[1:]
            fresh = False
        current.append(unit)
        fresh = True
    if fresh:
        chunks.append(_render(current))
    return chunks


def chunk_document(
    document_id: str,
    title: str,
    text: str,
    *,
    size: int,
    overlap: int,
    source: str | None = None,
    tags: list[str] | None = None,
    ingested_at: datetime | None = None,
) -> list[Chunk]:
    """The document's chunks with sanitised metadata: documentId, chunkIndex, title, source, tags, modality, ingestedAt."""
    stamp = (ingested_at or datetime.now(UTC)).isoformat().replace("+00:00", "Z")
    base: dict[str, object] = {
        "documentId": document_id,
        "title": sanitize_metadata(title, MAX_TITLE),
        "modality": TEXT,
        "ingestedAt": stamp,
    }
    if source and (clean_source := sanitize_metadata(source, MAX_SOURCE)):
        base["source"] = clean_source
    # Chroma refuses empty lists, so a document without tags has no `tags` key.
    if clean_tags := sanitize_tags(tags):
        base["tags"] = clean_tags
    return [
        Chunk(chunk_id(document_id, i), piece, {**base, "chunkIndex": i})
        for i, piece in enumerate(split_text(text, size, overlap))
    ]
