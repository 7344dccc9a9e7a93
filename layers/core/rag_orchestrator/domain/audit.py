"""Audit records (docs/audit.md): one per turn, hash-chained per conversation.

A record holds who asked, when, and the SHA-256 and length of every text the turn handled — the
user message, each tool call's arguments and result, the answer, the reasoning trace — never the
texts themselves. Its `hash` is the SHA-256 of its canonical JSON (every field but `hash` and the
plain `callerId`, keys sorted, no spaces, UTF-8), `prevHash` included, so a record altered, removed
or reordered breaks the chain from there on. Who asked is in the hash as `actorRef`, an HMAC of the
caller id under a service key: erasing a caller removes the plain `callerId` beside it and the
chain still checks out (docs/privacy.md).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.domain.conversations import ConversationMessage
from rag_orchestrator.domain.ids import sortable_id
from rag_orchestrator.domain.messages import Role

GENESIS = "0" * 64  # the prevHash of a conversation's first record
UNHASHED = frozenset({"hash", "callerId"})  # the plain caller id is outside the hash: erasure removes it
Outcome = Literal["completed", "interrupted", "failed"]


def digest(text: str) -> dict[str, Any]:
    """`{sha256, length}` of the text's UTF-8 bytes (length in bytes)."""
    data = text.encode("utf-8")
    return {"sha256": hashlib.sha256(data).hexdigest(), "length": len(data)}


# json.dumps builds an encoder per call for any option it is given; one made once writes the same text.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical(record: Mapping[str, Any]) -> str:
    """Every field except `hash` and `callerId`, as compact sorted JSON: the text a record's hash covers."""
    return _CANONICAL.encode({key: value for key, value in record.items() if key not in UNHASHED})


def record_hash(record: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical(record).encode("utf-8")).hexdigest()


@functools.lru_cache(maxsize=4096)  # one caller's turns and reads ask for the same pseudonym again and again
def actor_ref(key: bytes, caller_id: str) -> str:
    """The pseudonym of a caller in audit records: HMAC-SHA-256 of the id under the service's key."""
    return hmac.new(key, caller_id.encode("utf-8"), hashlib.sha256).hexdigest()


def seal(entry: Mapping[str, Any], prev_hash: str, actor_key: bytes) -> dict[str, Any]:
    """The entry as a chained record: `actorRef` (of its `callerId`) and `prevHash` set, then its own `hash`."""
    record = _chained(entry, prev_hash, actor_key)
    return record | {"hash": record_hash(record)}


@dataclass(frozen=True, slots=True)
class Sealed:
    """A sealed record kept as its canonical JSON (the text hashed), the fields outside the hash but
    `hash` (the plain `callerId`, when given) and its `hash`: an immutable value a store keeps and
    shares, read back as a fresh record each time."""

    text: str
    unhashed: tuple[tuple[str, Any], ...]
    hash: str

    def record(self) -> dict[str, Any]:
        """`seal(...)`'s record, its hashed fields in canonical order; nothing shared between reads."""
        record: dict[str, Any] = json.loads(self.text)
        record.update(self.unhashed)
        record["hash"] = self.hash
        return record


def sealed(entry: Mapping[str, Any], prev_hash: str, actor_key: bytes) -> Sealed:
    """`seal(entry, prev_hash, actor_key)` as a Sealed value: one encoding, hashed and kept."""
    record = _chained(entry, prev_hash, actor_key)
    text = canonical(record)
    unhashed = tuple((key, record[key]) for key in sorted(UNHASHED - {"hash"}) if key in record)
    return Sealed(text, unhashed, hashlib.sha256(text.encode("utf-8")).hexdigest())


def _chained(entry: Mapping[str, Any], prev_hash: str, actor_key: bytes) -> dict[str, Any]:
    record = {**entry, "prevHash": prev_hash}
    if entry.get("callerId"):
        record["actorRef"] = actor_ref(actor_key, str(entry["callerId"]))
    return record


def pseudonymous(record: Mapping[str, Any]) -> dict[str, Any]:
    """The record without its plain caller id (an erasure): its hash still checks out."""
    return {key: value for key, value in record.items() if key != "callerId"}


@dataclass(frozen=True, slots=True)
class AuditTrail:
    """A page of a conversation's records, oldest first. `chain_valid`: every record from the first
    up to this page's last checks out; on the last page, the conversation's head hash too."""

    records: list[dict[str, Any]]
    chain_valid: bool
    next_cursor: str | None = None


@dataclass(frozen=True, slots=True)
class ChainCheck:
    valid: bool
    last_hash: str  # the stored hash of the last record checked (the next record's prevHash)


def check_chain(records: Iterable[Mapping[str, Any]], prev_hash: str = GENESIS) -> ChainCheck:
    """Each record's hash recomputed and its prevHash matched against the record before it."""
    valid = True
    for record in records:
        if record.get("prevHash") != prev_hash or record.get("hash") != record_hash(record):
            valid = False
        prev_hash = str(record.get("hash"))
    return ChainCheck(valid, prev_hash)


@dataclass(slots=True)
class TurnFacts:
    """What a turn's audit record is made of. A continuation after an approval decision has no
    `question` of its own; `stored` is what the turn stores, `answer` its answer among them."""

    conversation_id: str
    actor: Caller
    request_id: str | None
    moment: datetime
    question: ConversationMessage | None
    stored: Sequence[ConversationMessage]
    tool_success: Mapping[str, bool]
    answer: ConversationMessage | None
    model: str
    tokens: int
    iterations: int
    outcome: Outcome
    finish_reason: str | None
    error: str | None = None
    client_request_id: str | None = None  # the client's X-Request-Id, never our requestId


def turn_entry(facts: TurnFacts) -> dict[str, Any]:
    """A turn's record before it is sealed: what it stored, digested."""
    stored, question, answer = facts.stored, facts.question, facts.answer
    results = {m.tool_call_id: m for m in stored if m.role is Role.TOOL}
    calls = [
        {
            "toolCallId": call.id,
            "toolName": call.function.name,
            "arguments": digest(call.function.arguments),
            "result": digest(results[call.id].content) if call.id in results else None,
            "success": facts.tool_success.get(call.id),
        }
        for message in stored
        for call in message.tool_calls or ()
    ]
    reasoning = "\n\n".join(m.reasoning for m in stored if m.reasoning)
    return {
        "recordId": sortable_id(),
        "conversationId": facts.conversation_id,
        "time": facts.moment.isoformat().replace("+00:00", "Z"),
        "requestId": facts.request_id,
        "clientRequestId": facts.client_request_id,
        "callerId": facts.actor.caller_id,
        "actor": {"roles": list(facts.actor.roles)},
        "outcome": facts.outcome,
        "finishReason": facts.finish_reason,
        "error": facts.error,
        "model": facts.model,
        "iterations": facts.iterations,
        "tokens": facts.tokens,
        "userMessage": {"messageId": question.message_id, **digest(question.content)} if question else None,
        "toolCalls": calls,
        "answer": {"messageId": answer.message_id, **digest(answer.content)} if answer else None,
        "reasoning": digest(reasoning) if reasoning else None,
    }
