"""The quick schema check (tools/schema_fit.py) says "fits" only where jsonschema finds no error."""

from __future__ import annotations

import itertools

import pytest
from jsonschema import Draft202012Validator

from rag_orchestrator.tools.registry import schema_errors
from rag_orchestrator.tools.schema_fit import quick_fit

SIMPLE = [
    {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    {
        "type": "object",
        "description": "an order lookup",
        "properties": {
            "order": {"type": "integer", "description": "its number"},
            "price": {"type": "number"},
            "rush": {"type": "boolean"},
            "tags": {"type": "array"},
            "extra": {"type": "object"},
            "note": {"type": "null"},
            "size": {"type": "string", "enum": ["S", "M", "L"]},
            "any": {"title": "anything"},
        },
        "required": ["order"],
        "additionalProperties": False,
    },
    {"properties": {"q": {"type": "string"}}},
    {"type": "object"},
]
BEYOND = [
    {"type": "object", "properties": {"q": {"type": "string", "minLength": 2}}},
    {"type": "object", "properties": {"q": {"type": ["string", "null"]}}},
    {"type": "object", "properties": {"n": {"enum": [1, 2]}}},
    {"type": "object", "properties": {"o": {"type": "object", "properties": {"a": {"type": "string"}}}}},
    {"type": "object", "additionalProperties": {"type": "string"}},
    {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"},
    {"type": "array"},
]
VALUES = ["x", "", "M", "XL", 0, 1, -3, 1.0, 2.5, True, False, None, [], [1], {}, {"a": 1}]
NAMES = ["query", "order", "price", "rush", "tags", "extra", "note", "size", "any", "q", "other"]


def arguments() -> list[dict]:
    single = [{name: value} for name, value in itertools.product(NAMES, VALUES)]
    pairs = [{"order": 7, name: value} for name, value in itertools.product(NAMES, VALUES)]
    return [{}, *single, *pairs]


@pytest.mark.parametrize("schema", SIMPLE + BEYOND)
def test_it_says_fits_only_where_jsonschema_finds_no_error(schema):
    fits, validator = quick_fit(schema), Draft202012Validator(schema)
    for args in arguments():
        if fits is not None and fits(args):
            assert not list(validator.iter_errors(args)), (schema, args)


@pytest.mark.parametrize("schema", SIMPLE)
def test_a_simple_schema_is_checked_quickly_and_agrees_where_types_are_plain(schema):
    fits, validator = quick_fit(schema), Draft202012Validator(schema)
    assert fits is not None
    for args in arguments():
        plain = not any(isinstance(v, float) and v.is_integer() for v in args.values())
        if plain:  # 1.0 is an integer to jsonschema: the quick check leaves that to it
            assert fits(args) == (not list(validator.iter_errors(args))), (schema, args)


@pytest.mark.parametrize("schema", BEYOND)
def test_a_schema_beyond_it_is_left_to_jsonschema(schema):
    assert quick_fit(schema) is None


def test_errors_are_still_worded_by_jsonschema():
    schema = SIMPLE[1]
    assert schema_errors(schema, {"order": 7}) == []
    assert schema_errors(schema, {"order": 1.0}) == []
    assert schema_errors(schema, {"order": "7"}) == ["order: '7' is not of type 'integer'"]
    assert schema_errors(schema, {"order": 7, "size": "XL"}) == ["size: 'XL' is not one of ['S', 'M', 'L']"]
    assert schema_errors(schema, {"order": 7, "other": 1}) == [
        "arguments: Additional properties are not allowed ('other' was unexpected)"
    ]


def test_jsonschema_is_imported_only_for_a_call_the_quick_check_does_not_pass():
    """A fresh process's first tool call whose arguments fit never pays jsonschema's import (~0.12 s)."""
    import os
    import subprocess
    import sys

    script = """
import sys
from rag_orchestrator.tools.registry import schema_errors
schema = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
assert schema_errors(schema, {"query": "tests"}) == []
print("jsonschema" in sys.modules)
print(schema_errors(schema, {"query": 3}))
print("jsonschema" in sys.modules)
"""
    environ = os.environ | {"PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=environ, check=True
    )
    fitted, errors, refused = done.stdout.splitlines()
    assert (fitted, refused) == ("False", "True")
    assert errors == "[\"query: 3 is not of type 'string'\"]"
