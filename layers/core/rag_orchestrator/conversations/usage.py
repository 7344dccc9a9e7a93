"""Token usage per caller per UTC day on the table (docs/usage.md), counted inside the turn's own writes.

    PK=USAGE#<callerId>  SK=DAY#<YYYY-MM-DD>   tokensUsed (atomic ADD), expiresAt (TTL)

A turn with a limit adds a ConditionCheck on its day's item to the transaction that starts it (used
below the limit, or no item yet), and every turn, limited or not, adds its tokens in the transaction
that finishes it: budgets cost no request of their own. Turns that start together all pass the
check, so a caller overspends by at most what those turns use.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from rag_orchestrator.conversations import items as it
from rag_orchestrator.conversations.store import in_worker_thread
from rag_orchestrator.conversations.table import ConditionFailed, Table
from rag_orchestrator.domain.budgets import Spend, day_end, exhausted
from rag_orchestrator.errors import BudgetExhausted

KEEP = timedelta(days=8)  # a day's counter outlives its day by a week


def usage_key(caller_id: str, day: str) -> dict[str, Any]:
    return it.to_attributes({"PK": f"USAGE#{caller_id}", "SK": f"DAY#{day}"})


def budget_check(spend: Spend) -> dict[str, Any]:
    """The ConditionCheck a limited turn's start carries: below its limit, or nothing used yet."""
    return {
        "ConditionCheck": {
            "Key": usage_key(spend.caller_id, spend.day),
            "ConditionExpression": "attribute_not_exists(tokensUsed) OR tokensUsed < :limit",
            "ExpressionAttributeValues": it.to_attributes({":limit": spend.limit}),
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
    }


def usage_add(spend: Spend, tokens: int) -> dict[str, Any]:
    """The Update a finishing turn carries: its tokens added to its caller's day."""
    return {
        "Update": {
            "Key": usage_key(spend.caller_id, spend.day),
            "UpdateExpression": "ADD tokensUsed :t SET callerId = :c, #day = :d, expiresAt = :e, entity = :u",
            "ExpressionAttributeNames": {"#day": "day"},
            "ExpressionAttributeValues": it.to_attributes(
                {
                    ":t": tokens,
                    ":c": spend.caller_id,
                    ":d": spend.day,
                    ":e": it.epoch(day_end(spend.day) + KEEP),
                    ":u": "usage",
                }
            ),
        }
    }


def refused_budget(failed: ConditionFailed, index: int, spend: Spend | None) -> BudgetExhausted | None:
    """The 429 a cancelled transaction means when its budget check (action `index`) failed."""
    if spend is None or spend.limit is None or failed.code(index) != "ConditionalCheckFailed":
        return None
    return exhausted(spend, failed.old(index).get("tokensUsed"))


class UsageReads:
    """The DynamoDB store's read of a caller's day (GET /api/v1/usage)."""

    _table: Table

    @in_worker_thread
    def usage(self, caller_id: str, day: str) -> int:
        response = self._table.call("get_item", Key=usage_key(caller_id, day), ConsistentRead=True)
        return int(it.from_attributes(response.get("Item") or {}).get("tokensUsed", 0))
