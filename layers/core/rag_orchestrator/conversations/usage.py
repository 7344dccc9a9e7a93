"""Token usage per caller per UTC day on the table (docs/usage.md), counted inside the turn's own writes.

    PK=USAGE#<callerId>  SK=DAY#<YYYY-MM-DD>   tokensUsed, committed (atomic ADD), expiresAt (TTL)

`committed` is what was used plus what running turns hold. A limited turn's start transaction adds
its reserve to `committed` on condition that it is under the limit; the transaction that finishes a
turn adds its tokens to `tokensUsed` and its tokens less its reserve to `committed`. While budgets are
configured every turn is counted, limited or not; budgets cost no request of their own. A guest's
turn is also counted on all guests' day (`USAGE#guest:*`), by a request before and after (GuestPool).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable
from datetime import timedelta
from typing import Any, Concatenate, Protocol, TypeGuard

from rag_orchestrator.conversations import items as it
from rag_orchestrator.conversations.ledger import ledger_update
from rag_orchestrator.conversations.table import ConditionFailed, Table
from rag_orchestrator.domain.audit import actor_ref
from rag_orchestrator.domain.budgets import Meter, Spend, day_end, exhausted
from rag_orchestrator.domain.usage import UsageLine
from rag_orchestrator.errors import BudgetExhausted
from rag_orchestrator.observability import logger

KEEP = timedelta(days=8)  # a day's counter outlives its day by a week


ERASED_KEEP = timedelta(hours=1)  # longer than any answer runs: one started before an erasure ends by then


def erasing_key(actor_ref: str) -> dict[str, Any]:
    """The erasure running for a caller (lifecycle/jobs.py), while it runs."""
    return it.to_attributes({"PK": f"ERASING#{actor_ref}", "SK": it.META})


def erased_key(actor_ref: str) -> dict[str, Any]:
    """When a caller's last erasure completed, kept ERASED_KEEP (lifecycle/jobs.py)."""
    return it.to_attributes({"PK": f"ERASED#{actor_ref}", "SK": it.META})


def usage_key(caller_id: str, day: str) -> dict[str, Any]:
    return it.to_attributes({"PK": f"USAGE#{caller_id}", "SK": f"DAY#{day}"})


def _day_values(spend: Spend, meter: Meter) -> dict[str, Any]:
    return {
        ":c": meter.owner,
        ":d": spend.day,
        ":e": it.epoch(day_end(spend.day) + KEEP),
        ":u": "usage",
    }


DAY_SETS = "SET callerId = :c, #day = :d, expiresAt = :e, entity = :u"


def _hold(spend: Spend, meter: Meter, amount: int) -> dict[str, Any]:
    """An UpdateItem's parameters: `amount` more held on the meter's day, on condition that the day
    is under its limit."""
    return {
        "Key": usage_key(meter.owner, spend.day),
        "UpdateExpression": f"ADD committed :r {DAY_SETS}",
        "ConditionExpression": "attribute_not_exists(committed) OR committed < :limit",
        "ExpressionAttributeNames": {"#day": "day"},
        "ExpressionAttributeValues": it.to_attributes(
            _day_values(spend, meter) | {":r": amount, ":limit": meter.limit}
        ),
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }


def _settle(spend: Spend, meter: Meter, tokens: int) -> dict[str, Any]:
    return {
        "Key": usage_key(meter.owner, spend.day),
        "UpdateExpression": f"ADD tokensUsed :t, committed :settle {DAY_SETS}",
        "ExpressionAttributeNames": {"#day": "day"},
        "ExpressionAttributeValues": it.to_attributes(
            _day_values(spend, meter) | {":t": tokens, ":settle": tokens - spend.reserve}
        ),
    }


def reservation(spend: Spend) -> dict[str, Any]:
    """A limited turn's hold on its caller's day, on condition that the day is under its limit."""
    return _hold(spend, spend.meters()[0], spend.reserve)


def settlement(spend: Spend, tokens: int) -> dict[str, Any]:
    """The Update a finishing turn carries: its tokens added to its caller's day, its hold let go."""
    return {"Update": _settle(spend, spend.meters()[0], tokens)}


def refused_budget(failed: ConditionFailed, index: int, spend: Spend | None) -> BudgetExhausted | None:
    """The 429 a cancelled transaction means when its reservation (action `index`) failed."""
    if spend is None or not spend.limited or failed.code(index) != "ConditionalCheckFailed":
        return None
    return exhausted(spend, int(failed.old(index).get("tokensUsed", 0)))


class GuestPool:
    """All guests' day, held and settled by plain UpdateItems beside a guest's turn transactions: every
    guest's turn writes this one item, and transactions writing one item at once cancel each other,
    where single updates just queue. One request each way, for guests' turns only."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def hold(self, spend: Spend) -> None:
        """Hold the turn's reserve of all guests' day; BudgetExhausted (429) when it is spent."""
        meter = spend.meters()[-1]
        try:
            self._table.call("update_item", **_hold(spend, meter, spend.reserve))
        except ConditionFailed as failed:
            raise exhausted(spend, int(failed.old(0).get("tokensUsed", 0)), meter) from None

    def release(self, spend: Spend) -> None:
        self._table.call(
            "update_item",
            Key=usage_key(spend.meters()[-1].owner, spend.day),
            UpdateExpression="ADD committed :r",
            ExpressionAttributeValues=it.to_attributes({":r": -spend.reserve}),
        )

    def settle(self, spend: Spend, tokens: int) -> None:
        """The turn's tokens counted, its hold let go; a failure is logged, the turn is stored already."""
        try:
            self._table.call("update_item", **_settle(spend, spend.meters()[-1], tokens))
        except Exception as exc:
            logger.warning("guests' usage not counted", extra={"error_type": type(exc).__name__})


def pooled(spend: object) -> TypeGuard[Spend]:
    """Whether the turn counts on all guests' day too (a limited guest's spend)."""
    return isinstance(spend, Spend) and spend.limited and spend.pool_limit is not None


class _OnTable(Protocol):
    _table: Table


def holding_guests_day[S: _OnTable, **P, T](
    start: Callable[Concatenate[S, P], T],
) -> Callable[Concatenate[S, P], T]:
    """A store's start_turn that first holds a guest's turn's share of all guests' day (one request,
    BudgetExhausted when spent), given back when the start is refused."""
    position = list(inspect.signature(start).parameters).index("spend") - 1  # among the arguments after self

    @functools.wraps(start)
    def run(self: S, *args: P.args, **kwargs: P.kwargs) -> T:
        spend = kwargs["spend"] if "spend" in kwargs else args[position] if len(args) > position else None
        if not pooled(spend):
            return start(self, *args, **kwargs)
        pool = GuestPool(self._table)
        pool.hold(spend)
        try:
            return start(self, *args, **kwargs)
        except BaseException:
            pool.release(spend)
            raise

    return run


class UsageReads:
    """The DynamoDB store's read of a caller's day (GET /api/v1/usage), and the hold a decision
    takes on it (decisions have no start transaction to carry it)."""

    def __init__(self, table: Table, actor_key: bytes = b"") -> None:
        self._table = table
        self._actor_key = actor_key  # an erasure's pseudonym of the caller (domain/audit.py actor_ref)

    def reserve(self, spend: Spend) -> None:
        if pooled(spend):
            GuestPool(self._table).hold(spend)
        try:
            self._table.call("update_item", **reservation(spend))
        except ConditionFailed as failed:
            if pooled(spend):
                GuestPool(self._table).release(spend)
            raise exhausted(spend, int(failed.old(0).get("tokensUsed", 0))) from None

    def release(self, spend: Spend) -> None:
        """Let go of a turn's holds when it ends without finishing (it stored nothing). A day erased
        meanwhile with its caller holds nothing to let go of, and is not made again."""
        if spend.reserve:
            with contextlib.suppress(ConditionFailed):
                self._table.call(
                    "update_item",
                    Key=usage_key(spend.caller_id, spend.day),
                    UpdateExpression="ADD committed :r",
                    ConditionExpression="attribute_exists(PK)",
                    ExpressionAttributeValues=it.to_attributes({":r": -spend.reserve}),
                )
            if pooled(spend):
                GuestPool(self._table).release(spend)

    def count_answer(self, spend: Spend | None, line: UsageLine, started: int) -> None:
        """What an answer outside any turn spent: its line of the usage report and, when counted, its
        caller's day (its hold let go), in one transaction; all guests' day after it, for a guest.

        A turn's finishing write needs its conversation; an answer has none to need. So the write also
        checks that no erasure of the caller runs, nor completed after the answer `started` (epoch
        milliseconds): otherwise ConditionFailed, and nothing of the erased caller is written again."""
        tokens = line.input_tokens + line.output_tokens
        ref = actor_ref(self._actor_key, line.caller_id)
        not_erased = [
            {"ConditionCheck": {"Key": erasing_key(ref), "ConditionExpression": "attribute_not_exists(PK)"}},
            {
                "ConditionCheck": {
                    "Key": erased_key(ref),
                    "ConditionExpression": "attribute_not_exists(PK) OR erasedAt < :started",
                    "ExpressionAttributeValues": it.to_attributes({":started": started}),
                }
            },
        ]
        day = [settlement(spend, tokens)] if spend is not None and (tokens or spend.reserve) else []
        self._table.transact([ledger_update(line), *day, *not_erased])
        if day and pooled(spend):
            GuestPool(self._table).settle(spend, tokens)

    def usage(self, caller_id: str, day: str) -> int:
        response = self._table.call("get_item", Key=usage_key(caller_id, day), ConsistentRead=True)
        return int(it.from_attributes(response.get("Item") or {}).get("tokensUsed", 0))
