"""The one rule for every string a client sends (and every tool argument a model sends back).

Refused: lone UTF-16 surrogates (they cannot be encoded as UTF-8, so nothing downstream could store
or send them) and control characters other than tab, line feed and carriage return. Keys of
objects are checked like values. Refusing beats stripping here: a changed id, filter or metadata
value would silently mean something else.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Annotated, Any

from pydantic import AfterValidator, model_validator
from pydantic_core import PydanticCustomError

from rag_orchestrator.domain.base import RequestBody

# C0 controls but \t \n \r, DEL, C1 controls; and lone surrogates.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
MAX_DEPTH = 32  # deeper client JSON is refused rather than walked


class InvalidText(ValueError):
    """A string breaks the rule; the message names where (`context.items[2]`) and what."""


def text_problem(value: str) -> str | None:
    """Why `value` is refused, or None when it is fine."""
    if match := _SURROGATE.search(value):
        return f"contains a lone surrogate (U+{ord(match.group()):04X})"
    if match := _CONTROL.search(value):
        return f"contains a control character (U+{ord(match.group()):04X})"
    return None


def check_text(value: str, where: str = "value") -> str:
    """`value` unchanged, or InvalidText."""
    problem = text_problem(value)
    if problem:
        raise InvalidText(f"{where}: {problem}")
    return value


def check_strings(value: Any, where: str = "", depth: int = 0) -> Any:
    """Every string inside `value` (dict keys, values, list items, at any depth) checked; `value` unchanged."""
    if depth > MAX_DEPTH:
        raise InvalidText(f"{where or 'body'}: nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, str):
        check_text(value, where or "value")
    elif isinstance(value, dict):
        for key, item in value.items():
            label = f"{where}.{key}" if where else str(key)
            if isinstance(key, str) and (problem := text_problem(key)):
                raise InvalidText(f"{where or 'body'}: a key {problem}")
            check_strings(item, label, depth + 1)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            check_strings(item, f"{where}[{index}]", depth + 1)
    return value


def plain_label(value: str) -> str:
    """An identifier, title or file name without Unicode format characters (category Cf: bidi
    controls, zero-width characters), which would make it read otherwise than it is; ValueError
    (a 422) naming the first one."""
    for char in value:
        if unicodedata.category(char) == "Cf":
            raise ValueError(f"must not contain Unicode format characters (U+{ord(char):04X})")
    return value


def plain_optional(value: str | None) -> str | None:
    """`plain_label`, for a field that may be left out."""
    return None if value is None else plain_label(value)


# An identifier taken from a path or a query string: FastAPI refuses one holding a format character (422).
# Its constraints go inside (`Annotated[PlainLabel, Path(max_length=...)]`): a `= Path(...)` default drops
# the check (`PlainLabel | None = Query(...)` keeps it).
PlainLabel = Annotated[str, AfterValidator(plain_label)]


def plain_labels[T](values: T) -> T:
    """`plain_label` on each string of a list, and on each key of a mapping."""
    for value in values if isinstance(values, (list, tuple, dict)) else ():
        if isinstance(value, str):
            plain_label(value)
    return values


_PRINTABLE_ASCII = re.compile(r"[\x20-\x7e]*")


def printable_ascii(value: str) -> bool:
    """Whether `value` is printable ASCII alone, as a header naming something must be: headers are read
    as Latin-1, so any other byte (a UTF-8 one too) would name something else than the client meant."""
    return _PRINTABLE_ASCII.fullmatch(value) is not None


MAX_CALLER_ID = 256  # an identity provider's subject: Cognito's and Entra's are 36, Auth0's about 30
# DynamoDB keys are bounded in bytes (a sort key 1024): the usage ledger's CALLER#<id>#MODEL#<model>
# must fit with any model's name, whatever script the id is written in.
MAX_CALLER_ID_BYTES = 512


def caller_id_problem(value: str) -> str | None:
    """Why a token's caller id cannot name a caller, or None: blank, over MAX_CALLER_ID characters or
    MAX_CALLER_ID_BYTES in UTF-8, or holding a control, format or lone surrogate character (which no
    store keeps, or which reads otherwise than it is). `/`, `#`, `|` and letters of any script are a
    subject's own."""
    if not value.strip():
        return "is blank"
    if len(value) > MAX_CALLER_ID:
        return f"is over {MAX_CALLER_ID} characters"
    for char in value:
        if unicodedata.category(char) in ("Cc", "Cf", "Cs"):
            return f"holds the character U+{ord(char):04X}"
    if len(value.encode()) > MAX_CALLER_ID_BYTES:
        return f"is over {MAX_CALLER_ID_BYTES} bytes in UTF-8"
    return None


def scrub(value: str) -> str:
    """`value` with lone surrogates replaced by U+FFFD: for text shown back, never for input."""
    return _SURROGATE.sub("\ufffd", value)


class ClientBody(RequestBody):
    """A request body: every string in it, however nested, follows the rule before any field is read."""

    @model_validator(mode="before")
    @classmethod
    def _check_strings(cls, data: Any) -> Any:
        try:
            return check_strings(data)
        except InvalidText as exc:
            raise PydanticCustomError("invalid_text", "{problem}", {"problem": str(exc)}) from None
