"""The quick check of input schemas (tools/schema_check.py) held to jsonschema: it never calls valid a
schema `Draft202012Validator.check_schema` refuses, over every keyword it knows given every kind of
value, at the root and nested; it calls valid the schemas of the repository's catalogues and every
keyword's plain values; and a cold start loading a plain catalogue does not import jsonschema."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator, SchemaError

from rag_orchestrator.tools.catalog import EXAMPLE_PATH
from rag_orchestrator.tools.schema_check import KEYWORDS, plainly_valid

ROOT = Path(__file__).resolve().parents[2]
VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    1,
    -1,
    1.0,
    1.5,
    -0.5,
    "",
    "x",
    "string",
    "object",
    "bogus",
    [],
    ["string"],
    ["string", "string"],
    ["string", "null"],
    ["bogus"],
    [1],
    ["a", "a"],
    ["a", "b"],
    {},
    {"type": "string"},
    {"type": "bogus"},
    {"a": {"type": "string"}},
    {"a": {"type": "bogus"}},
    {"a": 5},
    {"a": True},
]
UNKNOWN = ("pattern", "$ref", "anyOf", "x-vendor", "items_")


def wrapped(keyword: str, value: Any) -> list[dict[str, Any]]:
    """The keyword at the root and in each kind of subschema."""
    inner = {keyword: value}
    return [
        inner,
        {"type": "object", "properties": {"p": inner}},
        {"type": "array", "items": inner},
        {"type": "object", "additionalProperties": inner},
        {"type": "object", "properties": {"p": {"type": "object", "properties": {"q": inner}}}},
    ]


def valid(schema: Any) -> bool:
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError:
        return False
    return True


def test_it_never_calls_valid_what_jsonschema_refuses():
    accepted: dict[str, int] = {}
    for keyword, value in itertools.product([*KEYWORDS, *UNKNOWN], VALUES):
        for schema in wrapped(keyword, value):
            if plainly_valid(schema):
                assert valid(schema), schema
                accepted[keyword] = accepted.get(keyword, 0) + 1
    assert set(accepted) == set(KEYWORDS)  # each keyword it knows is accepted for some value
    assert not set(accepted) & set(UNKNOWN)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "a"]},
        {"type": []},
        {"type": ["string", "string"]},
        {"minLength": -1},
        {"minLength": True},
        {"multipleOf": 0},
        {"properties": {"a": "string"}},
        {"items": [{"type": "string"}]},
        {"required": "a"},
        {"enum": "a"},
        {"examples": {}},
        {"description": 5},
        {"uniqueItems": "yes"},
        {"additionalProperties": "no"},
    ],
)
def test_what_jsonschema_refuses_it_refuses(schema):
    assert not valid(schema) and not plainly_valid(schema)


def catalogue_schemas() -> list[dict[str, Any]]:
    found = []
    for path in (
        ROOT / "tests/data/tool_catalog_30.yaml",
        ROOT / "devserver/demo_catalog.yaml",
        EXAMPLE_PATH,
    ):
        found += [tool["inputSchema"] for tool in yaml.safe_load(path.read_text(encoding="utf-8"))["tools"]]
    return found


def test_the_catalogues_of_the_repository_are_plainly_valid():
    schemas = catalogue_schemas()
    assert len(schemas) > 30 and all(plainly_valid(schema) for schema in schemas)
    plain = [
        {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 50}}},
        {
            "type": "object",
            "properties": {"tags": {"type": "array", "items": {"type": "string"}, "maxItems": 5}},
        },
        {
            "type": "object",
            "properties": {"when": {"type": "string", "format": "date"}},
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {"kind": {"enum": ["a", "b"], "default": "a", "description": "which"}},
        },
        {
            "type": ["object", "null"],
            "properties": {"x": {"type": ["number", "null"], "exclusiveMinimum": 0}},
        },
    ]
    assert all(plainly_valid(schema) and valid(schema) for schema in plain)


LOADS = """
import json, sys
from rag_orchestrator.config import load_settings
from rag_orchestrator.tools.catalog import load_catalog
catalog = load_catalog(load_settings(conversation_storage="memory", tool_catalog_path=sys.argv[1]))
print(json.dumps([len(catalog.tools), sorted(m for m in sys.modules if m.split(".")[0] == "jsonschema")]))
"""


def test_a_plain_catalogue_loads_without_importing_jsonschema(tmp_path):
    environ = os.environ | {
        "PYTHONPATH": os.pathsep.join(sys.path),
        "TOOL_API_URL": "http://127.0.0.1:9",
        "TOOL_API_TOKEN": "token",
    }
    plain, path = ROOT / "tests/data/tool_catalog_30.yaml", tmp_path / "refs.json"
    document = yaml.safe_load(plain.read_text(encoding="utf-8"))
    document["tools"][0]["inputSchema"]["properties"]["orderId"]["pattern"] = "^[A-Z]-[0-9]+$"
    path.write_text(json.dumps(document))
    loaded = []
    for catalogue in (plain, path):
        done = subprocess.run(
            [sys.executable, "-c", LOADS, str(catalogue)], capture_output=True, text=True, env=environ
        )
        assert done.returncode == 0, done.stderr[-2000:]
        loaded.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert loaded[0] == [30, []]
    assert loaded[1][0] == 30 and "jsonschema" in loaded[1][1]  # a pattern: jsonschema decides
