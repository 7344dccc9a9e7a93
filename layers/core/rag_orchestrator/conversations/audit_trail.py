"""Pages of a conversation's audit trail, the hash chain checked as they are read (docs/audit.md).

A cursor carries, signed, the last record id handed out, the hash the next record must name as its
prevHash, how many records were handed out, and whether the chain has held so far: each page is
checked against every page before it without reading them again, and the last page against the
conversation's head (TrailHead): its hash, present and well-formed once a record was written, and
`auditCount`, the number of records its turns wrote, which the trail must hold exactly.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rag_orchestrator.conversations.cursors import CursorCodec
from rag_orchestrator.conversations.items import pk
from rag_orchestrator.conversations.paging import check_limit
from rag_orchestrator.domain.audit import GENESIS, AuditTrail, check_chain
from rag_orchestrator.errors import BadRequest

AUDIT_PREFIX = "AUDIT#"  # PK=CONV#<id>, SK=AUDIT#<recordId>: sorts before CMID#, META and MSG#
AUDIT_HEAD = "AUDIT$"  # what remains of a purged conversation: its head hash, while its records are kept
_HASH = re.compile(r"^[0-9a-f]{64}$")
STORAGE_FIELDS = frozenset({"PK", "SK", "entity", "expiresAt"})  # the item's, not the record's


def audit_item(conversation_id: str, record: dict[str, Any]) -> dict[str, Any]:
    return record | {"PK": pk(conversation_id), "SK": AUDIT_PREFIX + record["recordId"], "entity": "audit"}


def record_of(values: dict[str, Any]) -> dict[str, Any]:
    """The record an audit item holds, exactly as sealed (storage attributes left out)."""
    return {key: value for key, value in values.items() if key not in STORAGE_FIELDS}


def audit_scope(conversation_id: str) -> str:
    return f"audit|{conversation_id}"


@dataclass(frozen=True, slots=True)
class TrailHead:
    """What the conversation (META, or the AUDIT$ item a purge left) says of its trail."""

    stored: Any  # lastAuditHash as found: None when absent
    expected: int  # auditCount: the records its turns wrote

    @classmethod
    def of(cls, values: dict[str, Any]) -> TrailHead:
        count = values.get("auditCount", 0)
        return cls(values.get("lastAuditHash"), count if isinstance(count, int) and count >= 0 else -1)

    def holds(self, last_hash: str, count: int) -> bool:
        """Whether a trail of `count` records ending in `last_hash` is all of it: none missing at
        the end, none removed with the head, no head broken."""
        if count != self.expected:
            return False
        if self.stored is None:
            return last_hash == GENESIS
        return (
            isinstance(self.stored, str) and bool(_HASH.fullmatch(self.stored)) and self.stored == last_hash
        )


@dataclass(frozen=True, slots=True)
class TrailPosition:
    after: str | None  # the last recordId handed out
    prev: str  # the hash the next record must name as prevHash
    valid: bool  # the chain held up to here
    count: int = 0  # records handed out so far


def position(codec: CursorCodec, cursor: str | None, scope: str) -> TrailPosition:
    if not cursor:
        return TrailPosition(None, GENESIS, True)
    held = codec.decode(cursor, scope)
    after, prev, valid, count = held.get("after"), held.get("prev"), held.get("valid"), held.get("count")
    if not (
        isinstance(after, str)
        and 0 < len(after) <= 64
        and isinstance(prev, str)
        and len(prev) <= 64
        and isinstance(valid, bool)
        and isinstance(count, int)
        and count > 0
    ):
        raise BadRequest("Invalid cursor")
    return TrailPosition(after, prev, valid, count)


def trail_page(
    page: list[dict[str, Any]],
    following: str | None,
    head: TrailHead,
    start: TrailPosition,
    codec: CursorCodec,
    scope: str,
) -> AuditTrail:
    """`page` checked from `start`; `following`: the recordId the next page starts after, None on
    the last page, which is checked against `head` as well."""
    check = check_chain(page, start.prev)
    valid = start.valid and check.valid
    count = start.count + len(page)
    if following is not None:
        state = {"after": following, "prev": check.last_hash, "valid": valid, "count": count}
        return AuditTrail(page, valid, codec.encode(state, scope))
    return AuditTrail(page, valid and head.holds(check.last_hash, count))


def held_page(
    records: Sequence[dict[str, Any]],
    head: TrailHead,
    limit: int,
    cursor: str | None,
    codec: CursorCodec,
    scope: str,
) -> AuditTrail:
    """A page of a trail held whole, in recordId order (the memory store, an archived trail)."""
    check_limit(limit)
    start = position(codec, cursor, scope)
    remaining = [r for r in records if start.after is None or str(r.get("recordId")) > start.after]
    page = list(remaining[:limit])
    following = str(page[-1].get("recordId")) if len(remaining) > limit else None
    return trail_page(page, following, head, start, codec, scope)


def head_of(values: dict[str, Any] | None) -> str:
    """The chain's head a META (or AUDIT$) item holds; GENESIS before the first record."""
    head = (values or {}).get("lastAuditHash")
    return head if isinstance(head, str) and _HASH.fullmatch(head) else GENESIS
