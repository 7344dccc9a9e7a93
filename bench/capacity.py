"""DynamoDB capacity as on-demand bills it, counted from the requests botocore sends and the answers.

Write request units: one per started KB of each item written, twice that inside a transaction. An
Update is billed on the larger of the item before and after; the items a turn updates (its META) are
under 1 KB, so an Update counts one KB (bench/dynamodb.py reports META's size to show it).
Read request units: one per started 4 KB of the items a read returns, half that when eventually
consistent (a Query's items are summed before rounding).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from bench.turns import item_size

KB = 1024


def write_units(item: dict[str, Any], transactional: bool) -> int:
    return max(1, math.ceil(item_size(item) / KB)) * (2 if transactional else 1)


def read_units(items: list[dict[str, Any]], consistent: bool) -> float:
    units = max(1, math.ceil(sum(item_size(item) for item in items) / (4 * KB)))
    return float(units) if consistent else units / 2


class CapacityMeter:
    """Read and write request units per kind, from the hooks of a DynamoDB client."""

    def __init__(self, client: Any) -> None:
        self.units: Counter[str] = Counter()
        self.items_in_transactions: list[int] = []
        self._consistent = False
        events = client.meta.events
        events.register("provide-client-params.dynamodb.TransactWriteItems", self._transaction)
        events.register("provide-client-params.dynamodb.PutItem", self._put)
        events.register("provide-client-params.dynamodb.BatchWriteItem", self._batch)
        events.register("provide-client-params.dynamodb.UpdateItem", self._update)
        for operation in ("Query", "GetItem"):
            events.register(f"provide-client-params.dynamodb.{operation}", self._read_params)
        events.register("after-call.dynamodb.Query", self._read)
        events.register("after-call.dynamodb.GetItem", self._read)

    def _transaction(self, params: dict[str, Any], **_: Any) -> None:
        actions = params.get("TransactItems", [])
        self.items_in_transactions.append(len(actions))
        for action in actions:
            ((kind, body),) = action.items()
            item = body.get("Item") if kind == "Put" else None
            self.units["write"] += write_units(item, True) if item else 2

    def _put(self, params: dict[str, Any], **_: Any) -> None:
        self.units["write"] += write_units(params["Item"], False)

    def _batch(self, params: dict[str, Any], **_: Any) -> None:
        for requests in params.get("RequestItems", {}).values():
            for request in requests:
                item = request.get("PutRequest", {}).get("Item")
                self.units["write"] += write_units(item, False) if item else 1

    def _update(self, **_: Any) -> None:
        self.units["write"] += 1

    def _read_params(self, params: dict[str, Any], **_: Any) -> None:
        self._consistent = bool(params.get("ConsistentRead"))

    def _read(self, parsed: dict[str, Any], **_: Any) -> None:
        items = parsed.get("Items") or ([parsed["Item"]] if parsed.get("Item") else [])
        self.units["read"] += read_units(items, self._consistent)

    def take(self) -> dict[str, float]:
        taken = {"write": float(self.units["write"]), "read": float(self.units["read"])}
        self.units.clear()
        return taken
