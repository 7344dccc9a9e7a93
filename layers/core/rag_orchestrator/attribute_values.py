"""Python values to DynamoDB attribute values and back, as boto3's TypeSerializer and TypeDeserializer
map them, without importing boto3 (its package import is ~0.1 s of a cold start's first turn).

    None -> NULL   bool -> BOOL   int, Decimal -> N (38 digits at most; a float is refused)
    str -> S       bytes -> B     a set of numbers, strings or bytes -> NS, SS or BS
    a mapping -> M                a list or tuple -> L

Read back, a number is a Decimal, a set a set and binary bytes (boto3 wraps it in its Binary).
tests/unit/test_attribute_values.py checks both directions against boto3's over the same values.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from decimal import Clamped, Context, Decimal, Inexact, Overflow, Rounded, Underflow
from typing import Any

# DynamoDB's numbers: 38 digits, exponents -130..126 (boto3's DYNAMODB_CONTEXT).
NUMBERS = Context(Emin=-128, Emax=126, prec=38, traps=[Clamped, Overflow, Inexact, Rounded, Underflow])


def _number(value: int | Decimal) -> str:
    return str(NUMBERS.create_decimal(value))


def _is_number(value: Any) -> bool:
    if isinstance(value, float):
        raise TypeError("Float types are not supported. Use Decimal types instead.")
    return isinstance(value, int | Decimal) and not isinstance(value, bool)


def serialize(value: Any) -> dict[str, Any]:
    if value is None:
        return {"NULL": True}
    if isinstance(value, bool):
        return {"BOOL": value}
    if _is_number(value):
        return {"N": _number(value)}
    if isinstance(value, str):
        return {"S": value}
    if isinstance(value, bytes | bytearray):
        return {"B": value}
    if isinstance(value, Set):
        return _set(value)
    if isinstance(value, Mapping):
        return {"M": {key: serialize(inner) for key, inner in value.items()}}
    if isinstance(value, list | tuple):
        return {"L": [serialize(inner) for inner in value]}
    raise TypeError(f"Unsupported type {type(value)} for value {value!r}")


def _set(values: Set[Any]) -> dict[str, Any]:
    if all(_is_number(v) for v in values):  # an empty set too, as boto3 (DynamoDB then refuses it)
        return {"NS": [_number(v) for v in values]}
    if all(isinstance(v, str) for v in values):
        return {"SS": list(values)}
    if all(isinstance(v, bytes | bytearray) for v in values):
        return {"BS": list(values)}
    raise TypeError(f"Unsupported type {type(values)} for value {values!r}")


def deserialize(attribute: Mapping[str, Any]) -> Any:
    if not attribute:
        raise TypeError("Value must be a nonempty dictionary whose key is a valid dynamodb type.")
    ((kind, value),) = attribute.items()
    if kind == "NULL":
        return None
    if kind in ("S", "BOOL", "B"):
        return value
    if kind == "N":
        return NUMBERS.create_decimal(value)
    if kind == "SS" or kind == "BS":
        return set(value)
    if kind == "NS":
        return {NUMBERS.create_decimal(v) for v in value}
    if kind == "L":
        return [deserialize(inner) for inner in value]
    if kind == "M":
        return {key: deserialize(inner) for key, inner in value.items()}
    raise TypeError(f"Dynamodb type {kind} is not supported")
