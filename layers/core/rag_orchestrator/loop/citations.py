"""Citations of the form [source:documentId#chunkIndex]."""

from __future__ import annotations

import re
from typing import Any

CITATION = re.compile(r"\[source:([^\]#\s]+)#(\d+)\]")


def cited_keys(text: str) -> set[tuple[str, int]]:
    return {(doc, int(index)) for doc, index in CITATION.findall(text)}


def drawn_on(answer: str, passages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The passages an answer cites, or every passage when it cites none of them."""
    cited = cited_keys(answer)
    chosen = [p for p in passages if (p["documentId"], p["chunkIndex"]) in cited]
    return chosen or passages
