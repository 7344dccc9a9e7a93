"""Our DynamoDB attribute values are boto3's: every kind of value serializes to what TypeSerializer
makes and reads back to what TypeDeserializer gives (binary as bytes, where boto3 wraps it), and what
boto3 refuses is refused."""

from __future__ import annotations

from decimal import Decimal

import pytest
from boto3.dynamodb.types import Binary, TypeDeserializer, TypeSerializer

from rag_orchestrator.attribute_values import deserialize, serialize

VALUES = [
    None,
    True,
    False,
    0,
    -7,
    10**37,
    Decimal("1.5"),
    Decimal("-0.000001"),
    Decimal("1E+100"),
    Decimal("12345678901234567890123456789012345678"),
    "",
    "plain",
    "h\u00e9 \u2603 \U0001f600",
    b"\x00\xffbytes",
    bytearray(b"ba"),
    {"S": "a map whose key names a type"},
    {"nested": {"list": [1, "two", None, [Decimal("3.25")], {"deep": True}]}},
    [],
    (1, 2),
    {"x"},
    {"a", "b"},
    {1, Decimal("2.5")},
    {b"one", b"two"},
    set(),
]


def plain(value):
    """boto3's read-back with its Binary wrapper unwrapped, as ours gives binary."""
    if isinstance(value, Binary):
        return value.value
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, set):
        return {plain(v) for v in value}
    return value


def unordered(attribute):
    """A set's members in a fixed order: neither serializer promises one."""
    ((kind, value),) = attribute.items()
    if kind in ("SS", "NS", "BS"):
        return {kind: sorted(value)}
    if kind == "M":
        return {kind: {k: unordered(v) for k, v in value.items()}}
    if kind == "L":
        return {kind: [unordered(v) for v in value]}
    return attribute


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_a_value_serializes_and_reads_back_as_with_boto3(value):
    theirs = TypeSerializer().serialize(value)
    ours = serialize(value)
    assert unordered(ours) == unordered(theirs)
    assert deserialize(theirs) == plain(TypeDeserializer().deserialize(theirs))


@pytest.mark.parametrize(
    "value",
    [
        1.5,
        {"price": 0.1},
        [float("nan")],
        Decimal("1.23456789012345678901234567890123456789"),
        10**40,
        object(),
        {1, "a"},
    ],
    ids=repr,
)
def test_what_boto3_refuses_is_refused(value):
    with pytest.raises(Exception) as theirs:
        TypeSerializer().serialize(value)
    with pytest.raises(type(theirs.value)):
        serialize(value)


def test_an_unknown_attribute_type_is_refused():
    with pytest.raises(TypeError):
        deserialize({"X": "1"})
    with pytest.raises(TypeError):
        deserialize({})
