"""Token budgets (docs/usage.md): what one caller may spend per UTC day, by role.

BUDGET_TOKENS_PER_DAY is one number for every caller, or `role=number,…` per role (the caller's
primary role decides); a role not listed, and `admin`, are unlimited.

A limited turn starts only while its caller's `committed` tokens (used, plus what running turns hold)
are under the limit, and holds BUDGET_TURN_RESERVE_TOKENS of it until it ends: concurrent turns
cannot all start on the same remaining budget, so a day overspends by at most one turn's tokens
(as long as no turn uses more than its reserve).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from rag_orchestrator.domain.callers import ADMIN, Caller, normalise_roles, primary_role
from rag_orchestrator.errors import RETRY_AFTER_SECONDS, BudgetExhausted


@dataclass(frozen=True, slots=True)
class Budgets:
    everyone: int | None = None  # one limit for every caller but admin
    by_role: tuple[tuple[str, int], ...] = ()

    @classmethod
    def parse(cls, text: str | None) -> Budgets:
        """`50000`, or `user=50000,mod=200000`; ValueError naming what is wrong."""
        text = (text or "").strip()
        if not text:
            return cls()
        if "=" not in text:
            return cls(everyone=_amount(text))
        limits: dict[str, int] = {}
        for part in text.split(","):
            role, sep, amount = part.partition("=")
            (role,) = normalise_roles([role]) or ("",)
            if not sep or not role:
                raise ValueError(f"expected role=tokens, got {part.strip()!r}")
            if role in limits:
                raise ValueError(f"role {role!r} given twice")
            limits[role] = _amount(amount)
        return cls(by_role=tuple(limits.items()))

    @property
    def configured(self) -> bool:
        return self.everyone is not None or bool(self.by_role)

    def limit_for(self, caller: Caller) -> int | None:
        """The caller's tokens per day; None: unlimited."""
        role = primary_role(caller.roles)
        if role == ADMIN:
            return None
        if self.everyone is not None:
            return self.everyone
        return dict(self.by_role).get(role)


def _amount(text: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise ValueError(f"expected a whole number of tokens, got {text.strip()!r}") from None
    if value < 1:
        raise ValueError("a budget must be at least 1 token")
    return value


@dataclass(frozen=True, slots=True)
class Spend:
    """Where a turn's tokens are counted: the caller's day, its limit (None: unlimited), and what a
    limited turn holds of the budget while it runs (`reserve`), settled to what it used at its end."""

    caller_id: str
    day: str  # YYYY-MM-DD, UTC
    limit: int | None = None
    reserve: int = 0

    @classmethod
    def today(cls, caller: Caller, budgets: Budgets, reserve: int, now: datetime | None = None) -> Spend:
        moment = now or datetime.now(UTC)
        limit = budgets.limit_for(caller)
        return cls(
            caller.caller_id, moment.astimezone(UTC).date().isoformat(), limit, reserve if limit else 0
        )

    @property
    def limited(self) -> bool:
        return self.limit is not None


def next_midnight(now: datetime | None = None) -> datetime:
    """When the current UTC day's budgets reset."""
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return datetime.combine(moment.date() + timedelta(days=1), datetime.min.time(), UTC)


def day_end(day: str) -> datetime:
    """The midnight that ends a UTC day given as YYYY-MM-DD."""
    return datetime.combine(date.fromisoformat(day) + timedelta(days=1), datetime.min.time(), UTC)


def seconds_to_reset(now: datetime | None = None) -> int:
    moment = now or datetime.now(UTC)
    return max(1, int((next_midnight(moment) - moment).total_seconds() + 0.999))


def exhausted(spend: Spend, used: int) -> BudgetExhausted:
    """The 429 of a caller at its limit: spent until midnight, or held by its turns still running."""
    if used < (spend.limit or 0):
        return BudgetExhausted(
            "The rest of today's token budget is held by your turns still running; try again when they finish",
            retry_after=RETRY_AFTER_SECONDS,
        )
    resets = next_midnight().isoformat().replace("+00:00", "Z")
    return BudgetExhausted(
        f"Today's token budget is spent ({used} of {spend.limit}); it resets at {resets}",
        retry_after=seconds_to_reset(),
    )
