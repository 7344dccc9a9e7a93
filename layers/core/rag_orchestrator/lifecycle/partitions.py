"""Reading whole partitions of the conversations table, and a caller's entries in the ByCaller index."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from rag_orchestrator.conversations import items as it
from rag_orchestrator.conversations.table import Table

BY_CALLER = "ByCaller"


def partition(table: Table, key: str) -> list[dict[str, Any]]:
    """Every item under PK=`key`, read consistently."""
    params: dict[str, Any] = {
        "KeyConditionExpression": "PK = :pk",
        "ExpressionAttributeValues": it.to_attributes({":pk": key}),
        "ConsistentRead": True,
    }
    found: list[dict[str, Any]] = []
    while True:
        response = table.call("query", **params)
        found += [it.from_attributes(v) for v in response.get("Items", ())]
        if "LastEvaluatedKey" not in response:
            return found
        params["ExclusiveStartKey"] = response["LastEvaluatedKey"]


def indexed(table: Table, partition_key: str) -> Iterator[str]:
    """The conversation ids listed under GSI1PK=`partition_key` in ByCaller (keys only)."""
    params: dict[str, Any] = {
        "IndexName": BY_CALLER,
        "KeyConditionExpression": "GSI1PK = :pk",
        "ExpressionAttributeValues": it.to_attributes({":pk": partition_key}),
        "ProjectionExpression": "PK",
    }
    while True:
        response = table.call("query", **params)
        for item in response.get("Items", ()):
            yield item["PK"]["S"].removeprefix("CONV#")
        if "LastEvaluatedKey" not in response:
            return
        params["ExclusiveStartKey"] = response["LastEvaluatedKey"]


def caller_conversations(table: Table, caller_id: str) -> list[str]:
    """Every conversation of the caller with anything left: listed (active, archived), deleted and not yet
    purged, and purged with their audit trail kept."""
    found: dict[str, None] = {}
    for prefix in ("CALLER#", it.GONE_PREFIX, it.TRAIL_PREFIX):
        found |= dict.fromkeys(indexed(table, prefix + caller_id))
    return list(found)


def raw_keys(values: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [it.to_attributes({"PK": v["PK"], "SK": v["SK"]}) for v in values]


@dataclass
class Tally:
    """What an erasure removed, per store; `audit` counts the records made pseudonymous."""

    dynamodb: int = 0
    s3: int = 0
    chroma: int = 0
    audit: int = 0
    conversations: int = 0

    def as_dict(self) -> dict[str, int]:
        return {
            "dynamodb": self.dynamodb,
            "s3": self.s3,
            "chroma": self.chroma,
            "auditRecords": self.audit,
            "conversations": self.conversations,
        }
