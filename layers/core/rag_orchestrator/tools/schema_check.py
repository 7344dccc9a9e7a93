"""A quick yes for a tool's input schema that is plainly valid JSON Schema, before jsonschema is asked.

A catalogue's tools (and an MCP server's) are checked against JSON Schema 2020-12 when they load: for a
30-tool catalogue jsonschema's import and `check_schema` were ~0.17 s of a cold start's CPU (bench/
README.md). Most input schemas are objects of typed properties with descriptions, enums and bounds.
For those, this check of the keywords' shapes says "valid" where `Draft202012Validator.check_schema`
finds no error; it never says "valid" where jsonschema would not, and for anything it does not know
(a `$ref`, `anyOf`, a `pattern`, a bound written 1.0, a keyword of its own) it says "ask jsonschema",
which then decides and words the problem. tests/unit/test_schema_check.py holds it to jsonschema.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_TYPES = frozenset({"array", "boolean", "integer", "null", "number", "object", "string"})


def _text(value: Any) -> bool:
    return isinstance(value, str)


def _flag(value: Any) -> bool:
    return isinstance(value, bool)


def _anything(value: Any) -> bool:
    return True


def _number(value: Any) -> bool:
    return type(value) is int or type(value) is float  # True is no number to JSON Schema


def _count(value: Any) -> bool:
    return type(value) is int and value >= 0  # 1.0 is one too, to jsonschema: it decides


def _type(value: Any) -> bool:
    if isinstance(value, str):
        return value in _TYPES
    return (
        isinstance(value, list)
        and len(value) > 0
        and all(isinstance(v, str) and v in _TYPES for v in value)
        and len(set(value)) == len(value)
    )


def _names(value: Any) -> bool:
    return (
        isinstance(value, list) and all(isinstance(v, str) for v in value) and len(set(value)) == len(value)
    )


def _array(value: Any) -> bool:
    return isinstance(value, list)


def _positive(value: Any) -> bool:
    return _number(value) and value > 0


def _properties(value: Any) -> bool:
    return isinstance(value, dict) and all(plainly_valid(schema) for schema in value.values())


# Each keyword known here, and what its value must be; a subschema is checked the same way.
KEYWORDS: dict[str, Callable[[Any], bool]] = {
    "type": _type,
    "properties": _properties,
    "required": _names,
    "additionalProperties": lambda value: plainly_valid(value),
    "items": lambda value: plainly_valid(value),
    "enum": _array,
    "const": _anything,
    "default": _anything,
    "examples": _array,
    "description": _text,
    "title": _text,
    "$comment": _text,
    "format": _text,
    "deprecated": _flag,
    "readOnly": _flag,
    "writeOnly": _flag,
    "uniqueItems": _flag,
    "minimum": _number,
    "maximum": _number,
    "exclusiveMinimum": _number,
    "exclusiveMaximum": _number,
    "multipleOf": _positive,
    "minLength": _count,
    "maxLength": _count,
    "minItems": _count,
    "maxItems": _count,
    "minProperties": _count,
    "maxProperties": _count,
}


def plainly_valid(schema: Any) -> bool:
    """True only where `schema` is a valid JSON Schema 2020-12 (a boolean, or an object of the keywords
    above, each of the right shape); False means "ask jsonschema", not "invalid"."""
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, dict):
        return False
    for keyword, value in schema.items():
        check = KEYWORDS.get(keyword)
        if check is None or not check(value):
            return False
    return True
