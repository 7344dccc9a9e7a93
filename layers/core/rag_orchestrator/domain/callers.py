"""Who is calling and what their roles allow (docs/auth.md): one place for the role policy.

The caller is the authenticated principal (api/auth.py builds it); everything below the API reads
only this: the role that decides the prompt, and whether tools may be offered at all. Roles are
normalised once, here, when a Caller is made: `moderator` reads as `mod` everywhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

ADMIN, MOD, USER, ANONYMOUS = "admin", "mod", "user", "anonymous"
DEFAULT_ROLE = USER
ROLE_ALIASES = {"moderator": MOD}
# Most privileged first: a caller with several roles is treated as the first of these it has.
ROLE_PRECEDENCE = (ADMIN, MOD, USER)
# Guests (POST /api/v1/auth/guest) are callers `guest:<random id>` with the anonymous role; no other
# kind of caller may carry an id with this prefix (api/auth.py refuses it).
GUEST_PREFIX = "guest:"


def normalise_roles(roles: Iterable[str]) -> tuple[str, ...]:
    """Aliases to their role (`moderator` -> `mod`), blanks dropped, each role once, order kept."""
    named = (ROLE_ALIASES.get(role.strip(), role.strip()) for role in roles)
    return tuple(dict.fromkeys(role for role in named if role))


@dataclass(frozen=True, slots=True)
class Caller:
    """`claims`: the verified token's (dev mode: X-Caller-Claims), where pinned tool parameters come
    from; `token`: the caller's own bearer token (JWT mode), for tools that forward it."""

    caller_id: str
    roles: tuple[str, ...] = (DEFAULT_ROLE,)
    claims: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    token: str | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "roles", normalise_roles(self.roles))

    @property
    def anonymous(self) -> bool:
        return is_anonymous(self.roles)

    @property
    def guest(self) -> bool:
        """A guest: anonymous, but with an identity of its own that may keep conversations."""
        return is_guest(self.caller_id)

    @property
    def someone(self) -> bool:
        """A signed-in caller or a guest: not the shared anonymous one (which keeps no conversations and
        is asked no generated answers)."""
        return not self.anonymous or self.guest

    @property
    def may_use_tools(self) -> bool:
        return may_use_tools(self.roles)

    def has_any(self, roles: Iterable[str]) -> bool:
        return not set(normalise_roles(roles)).isdisjoint(self.roles)


ANONYMOUS_CALLER = Caller(ANONYMOUS, (ANONYMOUS,))
ASKING = "to ask for generated answers"


def refused_anonymous(purpose: str) -> str:
    """What the shared anonymous caller is told when it may not do `purpose` ("to keep conversations")."""
    return f"Sign in, or get a guest token from POST /api/v1/auth/guest, {purpose}"


def is_guest(caller_id: str) -> bool:
    return caller_id.startswith(GUEST_PREFIX)


def is_anonymous(roles: Sequence[str]) -> bool:
    return tuple(roles) == (ANONYMOUS,)


def may_use_tools(roles: Sequence[str]) -> bool:
    """Anonymous callers get answers without tools (docs/auth.md); so does a caller with no role at all."""
    return bool(roles) and not is_anonymous(roles)


def primary_role(roles: Sequence[str]) -> str:
    """The role that shapes the prompt: anonymous, else the most privileged known role, else `user`."""
    if is_anonymous(roles):
        return ANONYMOUS
    known = normalise_roles(roles)
    return next((role for role in ROLE_PRECEDENCE if role in known), DEFAULT_ROLE)
