"""How passages are written into a model's context, and read back (the offline extractive model reads them).

Two formats: the `rag_search` tool's JSON result `{"results": [...]}`, and the answer prompt's blocks

    <passage number="1" citation="[source:doc-7#2]" title="…" source="…" tags="a, b">
    text
    </passage>

Title, source and tags are sanitised (sanitize.py: data, never instructions) and escaped as attribute values; the text is
sanitised, truncated, and cannot close its block.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Sequence

from rag_orchestrator.domain.passages import CITATION, Passage, citation_key
from rag_orchestrator.sanitize import (
    FILTERED,
    MAX_SOURCE,
    MAX_TITLE,
    sanitize_for_prompt,
    sanitize_metadata,
    sanitize_tags,
)

_PASSAGE_TAG = re.compile(r"<\s*/?\s*passage\b", re.IGNORECASE)
_BLOCK = re.compile(r'<passage\b[^>]*?\bcitation="([^"]*)"[^>]*>\n?(.*?)\n?</passage>', re.DOTALL)


def format_passages(passages: Sequence[Passage]) -> str:
    """The JSON a `rag_search` result gives the model: {"results": [...]}. A fragment of conversation
    memory carries its `kind` (`said`, `answered`), and its title says it and its date."""
    return json.dumps({"results": [_result(p) for p in passages]}, ensure_ascii=False)


def _result(passage: Passage) -> dict[str, object]:
    result: dict[str, object] = {
        "documentId": passage.document_id,
        "chunkIndex": passage.chunk_index,
        "title": passage.title,
        "source": passage.source,
        "score": round(passage.score, 4),
        "text": passage.text,
    }
    if passage.kind:
        result["kind"] = passage.kind
    return result


def render_passage(number: int, passage: Passage, max_chars: int) -> str:
    attributes = {
        "number": str(number),
        "citation": citation_key(passage.document_id, passage.chunk_index),
        "title": sanitize_metadata(passage.title, MAX_TITLE),
        "source": sanitize_metadata(passage.source, MAX_SOURCE) if passage.source else "",
        "tags": ", ".join(sanitize_tags(passage.tags)),
    }
    head = " ".join(f'{name}="{html.escape(value)}"' for name, value in attributes.items() if value)
    text = _PASSAGE_TAG.sub(FILTERED, sanitize_for_prompt(passage.text.strip(), max_chars))
    return f"<passage {head}>\n{text}\n</passage>"


def render_context(passages: Sequence[Passage], max_chars: int) -> str:
    return "\n\n".join(render_passage(n, p, max_chars) for n, p in enumerate(passages, start=1))


def context_passages(prompt: str) -> list[tuple[str, int, str]]:
    """(documentId, chunkIndex, text) of each passage block in a prompt built with `render_context`."""
    return cited_blocks(_BLOCK, prompt)


def cited_blocks(blocks: re.Pattern[str], text: str) -> list[tuple[str, int, str]]:
    """(documentId, chunkIndex, text) of each block `blocks` finds (groups: its citation, its text)."""
    found = []
    for block in blocks.finditer(text):
        key = CITATION.fullmatch(html.unescape(block.group(1)))
        if key:
            found.append((key.group(1), int(key.group(2)), block.group(2)))
    return found
