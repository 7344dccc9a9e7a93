"""What turns spent, per UTC day, caller and model, on the table (docs/usage.md), for the usage report:

    PK=USAGEDAY#<YYYY-MM-DD>  SK=CALLER#<callerId>#MODEL#<model>
        callerId, model, day, turns, toolCalls, inputTokens, outputTokens (atomic ADD), expiresAt

Counted by an Update inside the transaction that finishes each turn (no request of its own); the
report queries one day partition after another.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from rag_orchestrator.conversations import items as it
from rag_orchestrator.conversations.table import Table
from rag_orchestrator.domain.budgets import day_end
from rag_orchestrator.domain.usage import UsageLine, days

KEEP = timedelta(days=400)  # a year's report, month by month, and a little more
PREFIX = "USAGEDAY#"


def ledger_update(line: UsageLine) -> dict[str, Any]:
    """The Update a finishing turn's transaction carries: its counts added to its day, caller and model."""
    key = {"PK": PREFIX + line.day, "SK": f"CALLER#{line.caller_id}#MODEL#{line.model}"}
    values = {
        ":turns": line.turns,
        ":calls": line.tool_calls,
        ":in": line.input_tokens,
        ":out": line.output_tokens,
        ":c": line.caller_id,
        ":m": line.model,
        ":d": line.day,
        ":e": it.epoch(day_end(line.day) + KEEP),
        ":u": "usage-day",
    }
    return {
        "Update": {
            "Key": it.to_attributes(key),
            "UpdateExpression": "ADD turns :turns, toolCalls :calls, inputTokens :in, outputTokens :out "
            "SET callerId = :c, model = :m, #day = :d, expiresAt = :e, entity = :u",
            "ExpressionAttributeNames": {"#day": "day"},
            "ExpressionAttributeValues": it.to_attributes(values),
        }
    }


class LedgerReads:
    def __init__(self, table: Table) -> None:
        self._table = table

    def usage_lines(self, first: date, last: date) -> list[UsageLine]:
        """Every caller's and model's counts of the days from `first` to `last`, inclusive."""
        lines: list[UsageLine] = []
        for day in days(first, last):
            params: dict[str, Any] = {
                "KeyConditionExpression": "PK = :pk",
                "ExpressionAttributeValues": it.to_attributes({":pk": PREFIX + day}),
            }
            while True:
                response = self._table.call("query", **params)
                lines += [_line(it.from_attributes(item)) for item in response.get("Items", ())]
                if not response.get("LastEvaluatedKey"):
                    break
                params["ExclusiveStartKey"] = response["LastEvaluatedKey"]
        return lines


def _line(item: dict[str, Any]) -> UsageLine:
    return UsageLine(
        day=item["day"],
        caller_id=item["callerId"],
        model=item["model"],
        turns=int(item.get("turns", 0)),
        tool_calls=int(item.get("toolCalls", 0)),
        input_tokens=int(item.get("inputTokens", 0)),
        output_tokens=int(item.get("outputTokens", 0)),
    )
