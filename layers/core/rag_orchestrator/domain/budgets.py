"""Token budgets (docs/usage.md): what one caller may spend per UTC day, by role.

BUDGET_TOKENS_PER_DAY is one number for every caller, or `role=number,…` per role (the caller's
primary role decides); a role not listed, and `admin`, are unlimited. Guests are always limited, on
two meters: GUEST_TOKENS_PER_DAY each, and GUEST_TOKENS_PER_DAY_TOTAL for all of them together.

A limited turn starts only while its caller's `committed` tokens (used, plus what running turns hold)
are under the limit, and holds BUDGET_TURN_RESERVE_TOKENS of it until it ends: concurrent turns
cannot all start on the same remaining budget, so a day overspends by at most one turn's tokens
(as long as no turn uses more than its reserve).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta

from rag_orchestrator.domain.callers import ADMIN, GUEST_PREFIX, Caller, normalise_roles, primary_role
from rag_orchestrator.errors import RETRY_AFTER_SECONDS, BudgetExhausted

# The meter of all guests' tokens: in the guest id space, where no guest (a random hex id) and no
# signed-in caller (refused the prefix) can be it.
GUESTS = GUEST_PREFIX + "*"
GUEST_TOKENS_PER_DAY = 20_000
GUEST_TOKENS_PER_DAY_TOTAL = 2_000_000


@dataclass(frozen=True, slots=True)
class Budgets:
    everyone: int | None = None  # one limit for every caller but admin
    by_role: tuple[tuple[str, int], ...] = ()
    guest: int = GUEST_TOKENS_PER_DAY  # each guest's, whatever else is configured
    guests_total: int = GUEST_TOKENS_PER_DAY_TOTAL  # all guests' together

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

    def with_guests(self, guest: int, guests_total: int) -> Budgets:
        return replace(self, guest=guest, guests_total=guests_total)

    @property
    def configured(self) -> bool:
        """Whether signed-in callers have budgets (guests always do)."""
        return self.everyone is not None or bool(self.by_role)

    def counts(self, caller: Caller) -> bool:
        """Whether the caller's turns are counted: every caller's while budgets are configured, a
        guest's always."""
        return self.configured or caller.guest

    def limit_for(self, caller: Caller) -> int | None:
        """The caller's tokens per day; None: unlimited."""
        if caller.guest:
            return self.guest
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
class Meter:
    """One counter of a day a turn's tokens go to: a caller's own, or all guests' (GUESTS)."""

    owner: str
    limit: int | None


@dataclass(frozen=True, slots=True)
class Spend:
    """Where a turn's tokens are counted: the caller's day, its limit (None: unlimited), and what a
    limited turn holds of the budget while it runs (`reserve`), settled to what it used at its end.
    A guest's turn counts on all guests' day too (`pool_limit`), held and settled alike."""

    caller_id: str
    day: str  # YYYY-MM-DD, UTC
    limit: int | None = None
    reserve: int = 0
    pool_limit: int | None = None

    @classmethod
    def today(cls, caller: Caller, budgets: Budgets, reserve: int, now: datetime | None = None) -> Spend:
        moment = now or datetime.now(UTC)
        limit = budgets.limit_for(caller)
        pool = budgets.guests_total if caller.guest else None
        day = moment.astimezone(UTC).date().isoformat()
        return cls(caller.caller_id, day, limit, reserve if limit else 0, pool)

    @classmethod
    def counted(cls, caller: Caller, budgets: Budgets, reserve: int) -> Spend | None:
        """Where the caller's tokens count today (a turn's, an answer's): nowhere while no budget is
        configured, a guest's always."""
        return cls.today(caller, budgets, reserve) if budgets.counts(caller) else None

    @property
    def limited(self) -> bool:
        return self.limit is not None

    def meters(self) -> tuple[Meter, ...]:
        """The caller's own meter, then all guests' for a guest."""
        own = Meter(self.caller_id, self.limit)
        return (own,) if self.pool_limit is None else (own, Meter(GUESTS, self.pool_limit))


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


def exhausted(spend: Spend, used: int, meter: Meter | None = None) -> BudgetExhausted:
    """The 429 of a meter at its limit (the caller's own by default): spent until midnight, or held
    by turns still running."""
    meter = meter or spend.meters()[0]
    resets = next_midnight().isoformat().replace("+00:00", "Z")
    if meter.owner == GUESTS:
        return BudgetExhausted(
            f"Guests have used today's tokens; sign in, or try again after {resets}",
            retry_after=seconds_to_reset() if used >= (meter.limit or 0) else RETRY_AFTER_SECONDS,
        )
    if used < (meter.limit or 0):
        return BudgetExhausted(
            "The rest of today's token budget is held by your turns still running; try again when they finish",
            retry_after=RETRY_AFTER_SECONDS,
        )
    return BudgetExhausted(
        f"Today's token budget is spent ({used} of {meter.limit}); it resets at {resets}",
        retry_after=seconds_to_reset(),
    )
