"""How conversations and messages map to DynamoDB items (docs/storage.md).

    PK=CONV#<id>  SK=AUDIT#<id>      an audit record (audit_trail.py; docs/audit.md)
    PK=CONV#<id>  SK=AUDIT$          a purged conversation's audit head, while its records are kept
    PK=CONV#<id>  SK=CMID#<client>   a clientMessageId already received
    PK=CONV#<id>  SK=FEEDBACK#<msg>  a rating, in the ByCaller index under FEEDBACK#<day> (feedback.py)
    PK=CONV#<id>  SK=META            the conversation, with the keys of the ByCaller and ByArchive
                                     indexes (ByArchive: see ARCHIVE_PREFIX below), and titleSearch
                                     (titles.py)
    PK=CONV#<id>  SK=MSG#<key>       a message; an earlier version carries supersededBy (versions.py)
    PK=CONV#<id>  SK=TURN#<turnId>…  the event log of a streamed turn (stream_log/items.py)

A message key is an inverted ULID: ascending order is newest first. One Query from `META` up to
`MSG$` therefore returns the conversation followed by its newest messages: a turn's context costs
one request.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from rag_orchestrator.attribute_values import deserialize, serialize
from rag_orchestrator.conversations.keys import activity_key, iso
from rag_orchestrator.conversations.titles import title_search
from rag_orchestrator.domain.callers import is_guest
from rag_orchestrator.domain.conversations import Conversation, ConversationMessage, ConversationStatus
from rag_orchestrator.domain.ids import sortable_id

META = "META"
MSG_PREFIX = "MSG#"
MSG_END = "MSG$"  # '$' sorts right after '#': above every message key
CMID_PREFIX = "CMID#"
ARCHIVE_SHARDS = 16
# ByArchive partitions: ACTIVE conversations by lastMessageAt, ARCHIVED ones whose message items
# are still being removed, DELETED ones by deletedAt (see archival.py); guests' conversations by
# lastMessageAt (never archived: purged once no guest token can reach them); the audit trails of
# purged conversations by the end of their retention; ARCHIVED ones by lastMessageAt, where
# CONVERSATION_RETENTION_DAYS finds them.
ARCHIVE_PREFIX, CLEANUP_PREFIX, PURGE_PREFIX = "ARCHIVE#", "CLEANUP#", "PURGE#"
EXPIRE_PREFIX, RETAIN_PREFIX, IDLE_PREFIX = "EXPIRE#", "RETAIN#", "IDLE#"
# ByCaller partitions besides CALLER#<id> (the listing): a caller's DELETED conversations not yet
# purged, and the audit trails kept of purged ones; what an erasure looks for (docs/privacy.md).
GONE_PREFIX, TRAIL_PREFIX = "GONE#", "TRAIL#"
# DynamoDB TTL (`expiresAt`) is a backstop this long after the archival job's own removal is due.
TTL_GRACE = timedelta(days=7)

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_INVERT = str.maketrans(_ALPHABET, _ALPHABET[::-1])


def pk(conversation_id: str) -> str:
    return f"CONV#{conversation_id}"


def archive_shard(conversation_id: str, prefix: str = ARCHIVE_PREFIX) -> str:
    """GSI3PK: `<prefix><shard>`, the shard a hash of the id (archival.py reads every shard)."""
    digest = hashlib.sha256(conversation_id.encode()).digest()
    return f"{prefix}{int.from_bytes(digest[:4]) % ARCHIVE_SHARDS}"


def epoch(moment: datetime) -> int:
    """A TTL value (`expiresAt`): seconds since the epoch."""
    return int(moment.timestamp())


def new_message_key() -> str:
    """A fresh message sort key; later calls sort before earlier ones."""
    return MSG_PREFIX + sortable_id().translate(_INVERT)


def to_attributes(values: dict[str, Any]) -> dict[str, Any]:
    return {name: serialize(value) for name, value in values.items()}


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, set)):
        return [_plain(v) for v in value]
    return value


def from_attributes(item: dict[str, Any]) -> dict[str, Any]:
    return {name: _plain(deserialize(value)) for name, value in item.items()}


def index_attributes(conversation: Conversation) -> dict[str, str]:
    """The index keys a conversation carries in its state: DELETED ones are in no index."""
    if conversation.status is ConversationStatus.DELETED:
        return {}
    activity = activity_key(conversation.updated_at, conversation.conversation_id)
    keys = {"GSI1PK": f"CALLER#{conversation.caller_id}", "GSI1SK": activity}
    if conversation.status is ConversationStatus.ACTIVE:
        last = conversation.last_message_at or conversation.created_at
        prefix = EXPIRE_PREFIX if is_guest(conversation.caller_id) else ARCHIVE_PREFIX
        keys |= {"GSI3PK": archive_shard(conversation.conversation_id, prefix), "GSI3SK": iso(last)}
    return keys


def conversation_item(conversation: Conversation) -> dict[str, Any]:
    values = conversation.model_dump(mode="json", by_alias=True, exclude_none=True)
    values |= {"PK": pk(conversation.conversation_id), "SK": META, "entity": "conversation"}
    if conversation.title:
        values["titleSearch"] = title_search(conversation.title)
    return values | index_attributes(conversation)


def conversation_from_item(values: dict[str, Any]) -> Conversation:
    return Conversation.model_validate(values)


def message_item(message: ConversationMessage, sort_key: str) -> dict[str, Any]:
    values = message.model_dump(mode="json", by_alias=True, exclude_none=True)
    return values | {"PK": pk(message.conversation_id), "SK": sort_key, "entity": "message"}


def marker_item(conversation_id: str, client_message_id: str, message: ConversationMessage) -> dict[str, Any]:
    return {
        "PK": pk(conversation_id),
        "SK": CMID_PREFIX + client_message_id,
        "entity": "clientMessage",
        "clientMessageId": client_message_id,
        "messageId": message.message_id,
        "createdAt": iso(message.created_at),
    }
