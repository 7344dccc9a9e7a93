"""Pages of a conversation's audit trail, the hash chain checked as they are read (docs/audit.md).

A cursor carries, signed, the last record id handed out, the hash the next record must name as its
prevHash, and whether the chain has held so far: each page is checked against every page before it
without reading them again, and the last page against the conversation's head hash.
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
class TrailPosition:
    after: str | None  # the last recordId handed out
    prev: str  # the hash the next record must name as prevHash
    valid: bool  # the chain held up to here


def position(codec: CursorCodec, cursor: str | None, scope: str) -> TrailPosition:
    if not cursor:
        return TrailPosition(None, GENESIS, True)
    held = codec.decode(cursor, scope)
    after, prev, valid = held.get("after"), held.get("prev"), held.get("valid")
    if not (
        isinstance(after, str)
        and 0 < len(after) <= 64
        and isinstance(prev, str)
        and len(prev) <= 64
        and isinstance(valid, bool)
    ):
        raise BadRequest("Invalid cursor")
    return TrailPosition(after, prev, valid)


def trail_page(
    page: list[dict[str, Any]],
    following: str | None,
    head: str,
    start: TrailPosition,
    codec: CursorCodec,
    scope: str,
) -> AuditTrail:
    """`page` checked from `start`; `following`: the recordId the next page starts after, None on
    the last page, which is checked against `head` as well."""
    check = check_chain(page, start.prev)
    valid = start.valid and check.valid
    if following is not None:
        state = {"after": following, "prev": check.last_hash, "valid": valid}
        return AuditTrail(page, valid, codec.encode(state, scope))
    return AuditTrail(page, valid and check.last_hash == head)


def held_page(
    records: Sequence[dict[str, Any]],
    head: str,
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
