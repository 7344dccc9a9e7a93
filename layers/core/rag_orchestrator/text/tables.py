"""Rows of a Markdown table as sentences a reader can quote: "Dish: Veggie burger, Price: €11.40, Energy: 910 kcal."

A row read alone loses its header, and a header alone answers nothing: each row is written out with the
header's names beside its cells, so that "How many calories…?" meets "Energy … kcal" and the answer
quotes the row it found.
"""

from __future__ import annotations

import re

_SEPARATOR_CELL = re.compile(r"^:?-+:?$")
_MAX_ROW_CHARS = 400


def cells(line: str) -> list[str]:
    """The cells of one `| a | b |` line, stripped (outer pipes optional)."""
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") else inner
    return [" ".join(cell.split()) for cell in inner.split("|")]


def is_separator(row: list[str]) -> bool:
    return bool(row) and all(_SEPARATOR_CELL.match(cell.replace(" ", "")) for cell in row if cell)


def rows(lines: list[str]) -> list[str]:
    """Each data row of a table's lines as one sentence; a header row (one followed by `|---|`) names the cells."""
    parsed = [cells(line) for line in lines]
    header: list[str] = []
    if len(parsed) > 1 and is_separator(parsed[1]):
        header, parsed = parsed[0], parsed[2:]
    written = []
    for row in parsed:
        if is_separator(row) or not any(row):
            continue
        names = header if len(header) == len(row) else [""] * len(row)
        parts = [f"{name}: {cell}" if name else cell for name, cell in zip(names, row, strict=True) if cell]
        written.append((", ".join(parts) + ".")[:_MAX_ROW_CHARS])
    return written
