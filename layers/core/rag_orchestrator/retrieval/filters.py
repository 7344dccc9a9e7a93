"""Chroma's `where` filters evaluated in process, for the chunks the lexical index holds in memory.

The operators `vector_store.build_where` writes and a few more, with Chroma's meaning: a plain value or
`$eq`, `$ne`, `$in`, `$nin`, `$gt`/`$gte`/`$lt`/`$lte`, `$contains` on a list (tags), `$and`, `$or`.
Anything else is refused with `UnsupportedFilter`, so a caller can ask Chroma instead of guessing.
"""

from __future__ import annotations

from typing import Any


class UnsupportedFilter(ValueError):
    """A `where` clause this module does not evaluate."""


def supported(where: dict[str, Any] | None) -> bool:
    try:
        matches({}, where)
    except UnsupportedFilter:
        return False
    return True


def matches(metadata: dict[str, Any], where: dict[str, Any] | None) -> bool:
    """Whether metadata satisfies the filter (every clause checked, so an unknown one always raises)."""
    if not where:
        return True
    results = [_clause(metadata, key, value) for key, value in where.items()]
    return all(results)


def _clause(metadata: dict[str, Any], key: str, value: Any) -> bool:
    if key in ("$and", "$or"):
        if not isinstance(value, list):
            raise UnsupportedFilter(key)
        parts = [matches(metadata, part) for part in value]
        return all(parts) if key == "$and" else any(parts)
    if key.startswith("$"):
        raise UnsupportedFilter(key)
    if not isinstance(value, dict):
        return metadata.get(key) == value
    if len(value) != 1:
        raise UnsupportedFilter(key)
    ((operator, operand),) = value.items()
    return _compare(metadata.get(key), operator, operand)


def _compare(held: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return bool(held == operand)
    if operator == "$ne":
        return bool(held != operand)
    if operator in ("$in", "$nin"):
        inside = held in operand
        return inside if operator == "$in" else not inside
    if operator == "$contains":
        return isinstance(held, list) and operand in held
    if operator in ("$gt", "$gte", "$lt", "$lte"):
        if held is None or isinstance(held, (str, list)):
            return False
        return {
            "$gt": held > operand,
            "$gte": held >= operand,
            "$lt": held < operand,
            "$lte": held <= operand,
        }[operator]
    raise UnsupportedFilter(operator)
