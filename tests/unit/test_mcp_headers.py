"""Arguments mirrored into `Mcp-Param-*` headers (tools/mcp_headers.py), beside the SDK's own rules
for them (`mcp.shared.inbound`): the same annotations accepted, the same headers, the same values."""

from __future__ import annotations

import pytest
from mcp.shared.inbound import (
    encode_header_value,
    find_invalid_x_mcp_header,
    mcp_param_headers,
    x_mcp_header_map,
)

from rag_orchestrator.tools.mcp_headers import encoded, header_map, param_headers


def prop(kind: str, token: object = "Region") -> dict:
    return {"type": kind, "x-mcp-header": token}


SCHEMAS = {
    "none": {"type": "object", "properties": {"q": {"type": "string"}}},
    "one": {"type": "object", "properties": {"region": prop("string")}},
    "three kinds": {
        "type": "object",
        "properties": {"r": prop("string", "R"), "n": prop("integer", "N"), "b": prop("boolean", "B")},
    },
    "nested": {
        "type": "object",
        "properties": {"where": {"type": "object", "properties": {"r": prop("string")}}},
    },
    "a number": {"type": "object", "properties": {"x": prop("number")}},
    "no type": {"type": "object", "properties": {"x": {"x-mcp-header": "X"}}},
    "two types": {"type": "object", "properties": {"x": {"type": ["string", "null"], "x-mcp-header": "X"}}},
    "not a token": {"type": "object", "properties": {"x": prop("string", "Bad Name")}},
    "empty token": {"type": "object", "properties": {"x": prop("string", "")}},
    "not a string": {"type": "object", "properties": {"x": prop("string", 3)}},
    "twice": {"type": "object", "properties": {"a": prop("string", "Same"), "b": prop("string", "same")}},
    "at the root": {"type": "string", "x-mcp-header": "Root"},
    "in items": {"type": "object", "properties": {"l": {"type": "array", "items": prop("string")}}},
    "in anyOf": {"type": "object", "anyOf": [{"properties": {"x": prop("string")}}]},
    "in $defs": {"type": "object", "$defs": {"d": prop("string")}},
    "in a default": {"type": "object", "properties": {"x": {"type": "object", "default": prop("string")}}},
    "not a schema": "object",
    "absent": None,
}


@pytest.mark.parametrize("name", SCHEMAS)
def test_an_annotation_is_valid_exactly_where_the_sdk_says_and_maps_the_same(name: str) -> None:
    schema = SCHEMAS[name]
    valid = find_invalid_x_mcp_header(schema) is None
    assert (header_map(schema) is not None) == valid
    if valid:
        assert header_map(schema) == x_mcp_header_map(schema)
    assert (
        name in {"none", "one", "three kinds", "nested", "in a default", "not a schema", "absent"}
        or not valid
    )


ARGUMENTS = [
    {"region": "eu"},
    {"region": "Zürich"},
    {"region": " padded "},
    {"region": "=?base64?abc?="},
    {"region": "line\nbreak"},
    {"region": None},
    {},
    {"region": ["eu"]},
    {"r": "x", "n": 12, "b": True},
    {"r": "x", "n": -3, "b": False},
    {"where": {"r": "deep"}},
    {"where": "flat"},
    {"region": 10**5000},  # past CPython's digits for str(): not mirrored
]


@pytest.mark.parametrize("arguments", ARGUMENTS, ids=range(len(ARGUMENTS)))
def test_a_calls_headers_are_the_sdks(arguments: dict) -> None:
    for name in ("one", "three kinds", "nested"):
        mapped = header_map(SCHEMAS[name])
        assert mapped is not None
        assert param_headers(mapped, arguments) == mcp_param_headers(mapped, arguments)
    assert param_headers({("region",): "Region"}, {"region": "Zürich"}) == {
        "Mcp-Param-Region": "=?base64?WsO8cmljaA==?="
    }


@pytest.mark.parametrize(
    "value", ["plain", "with space", " lead", "trail ", "", "tab\there", "ünï", "=?base64?x?=", "🙂"]
)
def test_a_value_is_encoded_as_the_sdk_encodes_it(value: str) -> None:
    assert encoded(value) == encode_header_value(value)
