"""Arguments a tool of the 2026-07-28 MCP protocol wants in headers too (`Mcp-Param-<token>`).

A property of a tool's input schema annotated `"x-mcp-header": "<token>"` is mirrored into the header
`Mcp-Param-<token>` of each call, so that gateways can route on it without reading the body; a server
refuses a call without it (HEADER_MISMATCH). An annotation counts only on a property reached from the
root through `properties` alone, of type string, integer or boolean, its token an HTTP field name,
unique whatever its case; a client drops a tool listed with any other (as the SDK's does).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator, Mapping
from typing import Any

ANNOTATION = "x-mcp-header"
PREFIX = "Mcp-Param-"
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # RFC 9110: what a field name may hold
_SAFE = re.compile(r"[\x20-\x7E]*")  # printable ASCII survives a header as it is
_WRAPPED = re.compile(r"=\?base64\?.*\?=")
_TYPES = frozenset({"string", "integer", "boolean"})
# Keywords whose values are schemas; crossing one leaves the `properties` chain. Data keywords
# (`default`, `enum`, `const`, `examples`) and `$ref` are not entered.
_ONE = frozenset(
    {
        "items",
        "contains",
        "unevaluatedItems",
        "additionalProperties",
        "propertyNames",
        "unevaluatedProperties",
        "not",
        "if",
        "then",
        "else",
        "contentSchema",
    }
)
_LIST = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_MAP = frozenset({"patternProperties", "dependentSchemas", "$defs", "definitions"})


def _positions(schema: Any) -> Iterator[tuple[tuple[str, ...] | None, dict[str, Any]]]:
    """Every schema in `schema` with its path of `properties` keys (None once off that chain)."""
    stack: list[tuple[tuple[str, ...] | None, Any]] = [((), schema)]
    while stack:
        path, node = stack.pop()
        if not isinstance(node, dict):
            continue
        yield path, node
        for keyword, value in node.items():
            if keyword == "properties" and isinstance(value, dict):
                stack += [((*path, name) if path is not None else None, sub) for name, sub in value.items()]
            elif keyword in _ONE:
                stack.append((None, value))
            elif keyword in _LIST and isinstance(value, list):
                stack += [(None, sub) for sub in value]
            elif keyword in _MAP and isinstance(value, dict):
                stack += [(None, sub) for sub in value.values()]


def header_map(schema: Any) -> dict[tuple[str, ...], str] | None:
    """Each annotated property's path and token; None when an annotation is not a valid one."""
    found: dict[tuple[str, ...], str] = {}
    tokens: set[str] = set()
    for path, node in _positions(schema):
        if ANNOTATION not in node:
            continue
        token = node[ANNOTATION]
        if not path or not isinstance(token, str) or not _TOKEN.fullmatch(token):
            return None
        kind = node.get("type")
        if not isinstance(kind, str) or kind not in _TYPES or token.lower() in tokens:
            return None
        tokens.add(token.lower())
        found[path] = token
    return found


def param_headers(headers: Mapping[tuple[str, ...], str], arguments: Mapping[str, Any]) -> dict[str, str]:
    """The `Mcp-Param-*` headers of a call with these arguments (a missing or non-scalar value: none)."""
    mirrored: dict[str, str] = {}
    for path, token in headers.items():
        value: Any = arguments
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, str | int | float):
            try:
                text = str(value)
            except ValueError:  # an int past CPython's digit limit
                continue
        else:
            continue
        mirrored[f"{PREFIX}{token}"] = encoded(text)
    return mirrored


def encoded(value: str) -> str:
    """The value as it is when a header carries it intact, else base64 in `=?base64?…?=`."""
    if _SAFE.fullmatch(value) and value == value.strip() and not _WRAPPED.fullmatch(value):
        return value
    return f"=?base64?{base64.b64encode(value.encode()).decode('ascii')}?="
