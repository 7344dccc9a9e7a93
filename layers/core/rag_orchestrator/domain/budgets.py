"""Token budgets (docs/usage.md): what one caller may spend per UTC day, by role.

BUDGET_TOKENS_PER_DAY is one number for every caller, or `role=number,…` per role (the caller's
primary role decides); a role not listed, and `admin`, are unlimited.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from rag_orchestrator.domain.callers import ADMIN, Caller, normalise_roles, primary_role
from rag_orchestrator.errors import BudgetExhausted


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
    """Where a turn's tokens are counted: the caller's day, and its limit (None: unlimited)."""

    caller_id: str
    day: str  # YYYY-MM-DD, UTC
    limit: int | None = None

    @classmethod
    def today(cls, caller: Caller, budgets: Budgets, now: datetime | None = None) -> Spend:
        moment = now or datetime.now(UTC)
        return cls(caller.caller_id, moment.astimezone(UTC).date().isoformat(), budgets.limit_for(caller))


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


def exhausted(spend: Spend, used: int | None = None) -> BudgetExhausted:
    shown = f" ({used} of {spend.limit})" if used is not None else f" ({spend.limit})"
    return BudgetExhausted(
        f"Today's token budget is spent{shown}; it resets at {next_midnight().isoformat().replace('+00:00', 'Z')}",
        retry_after=seconds_to_reset(),
    )
