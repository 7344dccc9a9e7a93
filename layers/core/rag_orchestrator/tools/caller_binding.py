"""Acting for the right caller (docs/tools.md): the parameters the service pins, and the header that
tells a tool's API who the call is for. For every tool that calls out on a caller's behalf.

Pinned parameters (`contextParams`, name -> `claim:<name>` or `context`) are filled from the caller's
verified claims or the request's context and replace whatever the model wrote; the model's schema
leaves them out. The identity (`assertion`, `caller-token`, `none`) becomes one request header.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

from rag_orchestrator.observability import logger
from rag_orchestrator.tools.base import ToolContext
from rag_orchestrator.tools.caller_assertions import CallerAssertions
from rag_orchestrator.tools.catalog import ASSERTION_HEADER, CLAIM_SOURCE, CONTEXT_SOURCE

Pinned = Mapping[str, str]  # parameter name -> its source


def hide_pinned(schema: dict[str, Any], pinned: Pinned) -> None:
    """Take the pinned parameters out of a schema the model sees (in place)."""
    for name in pinned:
        schema.get("properties", {}).pop(name, None)
    if pinned and "required" in schema:
        schema["required"] = [name for name in schema["required"] if name not in pinned]
        if not schema["required"]:
            del schema["required"]


def accepting_pinned(parameters: dict[str, Any], pinned: Pinned) -> dict[str, Any]:
    """What a call's arguments are checked against before it runs: the model's schema, pinned names
    let through (a model that still sends one has it replaced, not the call refused)."""
    if not pinned:
        return parameters
    properties = {**parameters.get("properties", {}), **{name: {} for name in pinned}}
    return {**parameters, "properties": properties}


def pin(arguments: dict[str, Any], pinned: Pinned, ctx: ToolContext) -> dict[str, Any]:
    """The arguments with every pinned parameter set from its source, whatever the model wrote;
    ValueError naming the first one whose source does not carry it."""
    filled = dict(arguments)
    for name, source in pinned.items():
        if source == CONTEXT_SOURCE:
            value, where = ctx.context.get(name), "the app's context"
        else:
            claim = source.removeprefix(CLAIM_SOURCE)
            value, where = ctx.claims.get(claim), f"the caller's sign-in (claim {claim})"
        if not isinstance(value, (str, int, float, bool)) or value == "":
            raise ValueError(f"{name} comes from {where}, which does not carry it; the tool was not called")
        filled[name] = value
    return filled


async def identity_headers(
    identity: str, ctx: ToolContext, assertions: CallerAssertions | None, audience: str, tool: str
) -> dict[str, str]:
    """The header that tells the API who the call is for; ValueError when it cannot be made."""
    if identity == "none":
        return {}
    if identity == "caller-token":
        if not ctx.caller_token:
            raise ValueError(
                "This tool acts with the caller's own sign-in token, which this request does not carry"
            )
        return {"Authorization": f"Bearer {ctx.caller_token}"}
    if assertions is None:
        raise ValueError("Caller assertions are not available here")
    try:
        assertion = await assertions.assertion(ctx, audience=audience, tool=tool)
    except Exception as exc:
        logger.error("caller assertion not signed", extra={"tool": tool, "error_type": type(exc).__name__})
        raise ValueError("The service could not sign the caller's identity for this tool") from None
    return {ASSERTION_HEADER: assertion}


def credentials(headers: Mapping[str, str]) -> list[str]:
    """The secrets identity headers carry, to redact from an answer that echoes its request."""
    return [value.removeprefix("Bearer ") for value in headers.values()]


def redact(text: str, secrets: list[str]) -> str:
    """`text` with each secret of four characters or more replaced, longest first, however a JSON
    encoder wrote it: any of its characters may be `\\uXXXX`, `/` may be `\\/` (PHP), `&` `<` `>`
    `\\u0026` (Go). A JSON string holding one stays valid JSON. The escaped forms are looked for only
    when the text, unescaped, still holds a secret (a pattern of a long secret costs ~0.1 ms a character
    to build; a caller's token is a thousand)."""
    kept = sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True)
    for secret in kept:
        text = text.replace(secret, "[redacted]")
    if "\\" in text:
        plain = _ESCAPE.sub(_unescaped, text)
        for secret in kept:
            if secret in plain:
                text = _written(secret).sub("[redacted]", text)
    return text


# JSON's two-character escapes: the character, and the letter after its backslash.
_SHORT_ESCAPES = {"/": "/", '"': '"', "\\": "\\", "\b": "b", "\f": "f", "\n": "n", "\r": "r", "\t": "t"}
_LETTERS = {letter: char for char, letter in _SHORT_ESCAPES.items()}
_ESCAPE = re.compile(r'\\(?:u([0-9a-fA-F]{4})|(["\\/bfnrt]))')


def _unescaped(match: re.Match[str]) -> str:
    return chr(int(match[1], 16)) if match[1] else _LETTERS[match[2]]


@functools.lru_cache(maxsize=256)
def _written(secret: str) -> re.Pattern[str]:
    """A pattern of the secret as itself or JSON-escaped, character by character."""
    parts = []
    for char in secret:
        forms = [re.escape(char)]
        if ord(char) <= 0xFFFF:  # \u followed by its code in either case
            code = "".join(f"[{d.lower()}{d.upper()}]" if d.isalpha() else d for d in f"{ord(char):04x}")
            forms.append(r"\\u" + code)
        if char in _SHORT_ESCAPES:
            forms.append(re.escape("\\" + _SHORT_ESCAPES[char]))
        parts.append(f"(?:{'|'.join(forms)})")
    return re.compile("".join(parts))
