"""Token usage per caller per UTC day on the table (docs/usage.md), counted inside the turn's own writes.

    PK=USAGE#<callerId>  SK=DAY#<YYYY-MM-DD>   tokensUsed, committed (atomic ADD), expiresAt (TTL)

`committed` is what was used plus what running turns hold. A limited turn's start transaction adds
its reserve to `committed` on condition that it is under the limit; the transaction that finishes a
turn adds its tokens to `tokensUsed` and its tokens less its reserve to `committed`. While budgets are
configured every turn is counted, limited or not; budgets cost no request of their own.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from rag_orchestrator.conversations import items as it
from rag_orchestrator.conversations.table import ConditionFailed, Table
from rag_orchestrator.domain.budgets import Spend, day_end, exhausted
from rag_orchestrator.errors import BudgetExhausted

KEEP = timedelta(days=8)  # a day's counter outlives its day by a week


def usage_key(caller_id: str, day: str) -> dict[str, Any]:
    return it.to_attributes({"PK": f"USAGE#{caller_id}", "SK": f"DAY#{day}"})


def _day_values(spend: Spend) -> dict[str, Any]:
    return {
        ":c": spend.caller_id,
        ":d": spend.day,
        ":e": it.epoch(day_end(spend.day) + KEEP),
        ":u": "usage",
    }


DAY_SETS = "SET callerId = :c, #day = :d, expiresAt = :e, entity = :u"


def reservation(spend: Spend) -> dict[str, Any]:
    """A limited turn's hold on its caller's day, on condition that the day is under its limit."""
    return {
        "Key": usage_key(spend.caller_id, spend.day),
        "UpdateExpression": f"ADD committed :r {DAY_SETS}",
        "ConditionExpression": "attribute_not_exists(committed) OR committed < :limit",
        "ExpressionAttributeNames": {"#day": "day"},
        "ExpressionAttributeValues": it.to_attributes(
            _day_values(spend) | {":r": spend.reserve, ":limit": spend.limit}
        ),
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }


def settlement(spend: Spend, tokens: int) -> dict[str, Any]:
    """The Update a finishing turn carries: its tokens added to its caller's day, its hold let go."""
    return {
        "Update": {
            "Key": usage_key(spend.caller_id, spend.day),
            "UpdateExpression": f"ADD tokensUsed :t, committed :settle {DAY_SETS}",
            "ExpressionAttributeNames": {"#day": "day"},
            "ExpressionAttributeValues": it.to_attributes(
                _day_values(spend) | {":t": tokens, ":settle": tokens - spend.reserve}
            ),
        }
    }


def refused_budget(failed: ConditionFailed, index: int, spend: Spend | None) -> BudgetExhausted | None:
    """The 429 a cancelled transaction means when its reservation (action `index`) failed."""
    if spend is None or not spend.limited or failed.code(index) != "ConditionalCheckFailed":
        return None
    return exhausted(spend, int(failed.old(index).get("tokensUsed", 0)))


class UsageReads:
    """The DynamoDB store's read of a caller's day (GET /api/v1/usage), and the hold a decision
    takes on it (decisions have no start transaction to carry it)."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def reserve(self, spend: Spend) -> None:
        try:
            self._table.call("update_item", **reservation(spend))
        except ConditionFailed as failed:
            raise exhausted(spend, int(failed.old(0).get("tokensUsed", 0))) from None

    def release(self, spend: Spend) -> None:
        """Let go of a turn's hold when it ends without finishing (it stored nothing)."""
        if spend.reserve:
            self._table.call(
                "update_item",
                Key=usage_key(spend.caller_id, spend.day),
                UpdateExpression="ADD committed :r",
                ExpressionAttributeValues=it.to_attributes({":r": -spend.reserve}),
            )

    def usage(self, caller_id: str, day: str) -> int:
        response = self._table.call("get_item", Key=usage_key(caller_id, day), ConsistentRead=True)
        return int(it.from_attributes(response.get("Item") or {}).get("tokensUsed", 0))
