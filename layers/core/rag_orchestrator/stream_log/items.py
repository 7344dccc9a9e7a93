"""How the event log maps to items of the conversations table (docs/storage.md).

    PK=CONV#<id>  SK=TURN#<turnId>              the turn: callerId, status (running|ended), lastSeq,
                                                cancelRequested, deadline (epoch ms), expiresAt
    PK=CONV#<id>  SK=TURN#<turnId>#<seq:08d>    a batch of the turn's events, the first numbered <seq>:
                                                events = zlib([[type, JSON], …]) (binary), expiresAt
    PK=CONV#<id>  SK=TURN$                      the conversation's newest streamed turn: turnId,
                                                callerId, expiresAt (written with the turn's entry)

Batches of a turn sort after its entry and in event order, and each starts one past the last event of
the one before: reading on from event n is one Query from `TURN#<turnId>#<n>`. Events of a turn repeat
their ids and keys, so a batch compresses about tenfold: a quarter second of chunks fits in the one
write unit (1 KB) that a write costs anyway. Everything carries
`expiresAt` (the table's TTL attribute) an hour after the turn's deadline; DynamoDB deletes expired
items within days, so reads skip them themselves. The keys sort after every message key (`MSG#…`),
so a turn's context Query never reads them.
"""

from __future__ import annotations

import json
import zlib
from typing import Any

from rag_orchestrator.conversations.items import pk
from rag_orchestrator.stream_log.log import LoggedEvent, TurnEntry

TURN_PREFIX = "TURN#"
LATEST = "TURN$"  # '$' sorts after every TURN# key: a batch Query never reads it
SEQ_DIGITS = 8


def turn_key(conversation_id: str, turn_id: str) -> dict[str, str]:
    return {"PK": pk(conversation_id), "SK": f"{TURN_PREFIX}{turn_id}"}


def batch_sort_key(turn_id: str, seq: int) -> str:
    return f"{TURN_PREFIX}{turn_id}#{seq:0{SEQ_DIGITS}d}"


def entry_item(entry: TurnEntry) -> dict[str, Any]:
    return turn_key(entry.conversation_id, entry.turn_id) | {
        "entity": "turn",
        "callerId": entry.caller_id,
        "status": entry.status,
        "lastSeq": entry.last_seq,
        "cancelRequested": entry.cancel_requested,
        "deadline": int(entry.deadline * 1000),
        "expiresAt": entry.expires_at,
    }


def latest_item(entry: TurnEntry) -> dict[str, Any]:
    """The pointer to the conversation's newest turn, replaced by each turn that opens."""
    return {
        "PK": pk(entry.conversation_id),
        "SK": LATEST,
        "entity": "latestTurn",
        "turnId": entry.turn_id,
        "callerId": entry.caller_id,
        "expiresAt": entry.expires_at,
    }


def entry_from_item(values: dict[str, Any], conversation_id: str, turn_id: str) -> TurnEntry:
    return TurnEntry(
        conversation_id=conversation_id,
        turn_id=turn_id,
        caller_id=values["callerId"],
        deadline=values["deadline"] / 1000,
        status=values["status"],
        last_seq=int(values.get("lastSeq", 0)),
        cancel_requested=bool(values.get("cancelRequested")),
    )


def batch_item(entry: TurnEntry, events: list[LoggedEvent]) -> dict[str, Any]:
    return {
        "PK": pk(entry.conversation_id),
        "SK": batch_sort_key(entry.turn_id, events[0].seq),
        "entity": "turnEvents",
        "events": zlib.compress(json.dumps([[e.type, e.data] for e in events]).encode()),
        "expiresAt": entry.expires_at,
    }


def events_of(values: dict[str, Any]) -> list[LoggedEvent]:
    first = int(values["SK"].rsplit("#", 1)[1])
    events = json.loads(zlib.decompress(bytes(values["events"])))
    return [LoggedEvent(first + n, kind, data) for n, (kind, data) in enumerate(events)]
