"""Who is calling and what their roles allow (seed 002's assistants): one place for the role policy.

The caller is the authenticated principal (api/auth.py builds it); everything below the API reads
only this: the role that decides the prompt, and whether tools may be offered at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

ANONYMOUS = "anonymous"
DEFAULT_ROLE = "user"
# Most privileged first: a caller with several roles is treated as the first of these it has.
ROLE_PRECEDENCE = ("admin", "moderator", "user")


@dataclass(frozen=True, slots=True)
class Caller:
    caller_id: str
    roles: tuple[str, ...] = (DEFAULT_ROLE,)

    @property
    def anonymous(self) -> bool:
        return is_anonymous(self.roles)

    @property
    def may_use_tools(self) -> bool:
        return may_use_tools(self.roles)


ANONYMOUS_CALLER = Caller(ANONYMOUS, (ANONYMOUS,))


def is_anonymous(roles: Sequence[str]) -> bool:
    return tuple(roles) == (ANONYMOUS,)


def may_use_tools(roles: Sequence[str]) -> bool:
    """Anonymous callers get answers without tools (seed 002); so does a caller with no role at all."""
    return bool(roles) and not is_anonymous(roles)


def primary_role(roles: Sequence[str]) -> str:
    """The role that shapes the prompt: anonymous, else the most privileged known role, else `user`."""
    if is_anonymous(roles):
        return ANONYMOUS
    return next((role for role in ROLE_PRECEDENCE if role in roles), DEFAULT_ROLE)
