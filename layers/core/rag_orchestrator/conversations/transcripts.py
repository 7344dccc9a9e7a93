"""Full transcripts as JSONL in S3 (`transcripts/<callerId>/<conversationId>.jsonl`), and audit
trails beside them (`audit/<callerId>/<conversationId>.jsonl`).

One ConversationMessage per line, reasoning included: this is internal storage, never a response;
an audit trail holds one record per line, as sealed. The archival job writes them
(archive_steps.py); reading an ARCHIVED conversation's messages, or its audit trail, reads them back.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from rag_orchestrator.domain.conversations import ConversationMessage
from rag_orchestrator.errors import StorageUnavailable

TRANSCRIPTS, TRAILS = "transcripts/", "audit/"  # then <callerId>/<conversationId>.jsonl


def transcript_key(caller_id: str, conversation_id: str) -> str:
    return f"{TRANSCRIPTS}{caller_id}/{conversation_id}.jsonl"


def trail_key(caller_id: str, conversation_id: str) -> str:
    return f"{TRAILS}{caller_id}/{conversation_id}.jsonl"


def trail_jsonl(records: Iterable[dict[str, Any]]) -> bytes:
    lines = (json.dumps(r, ensure_ascii=False, sort_keys=True, separators=(",", ":")) for r in records)
    return "".join(line + "\n" for line in lines).encode()


def merge_trails(held: Sequence[dict[str, Any]], stored: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The archived records, then those in the table it does not hold, in recordId order."""
    seen = {r.get("recordId") for r in held}
    fresh = [r for r in stored if r.get("recordId") not in seen]
    return sorted([*held, *fresh], key=lambda r: str(r.get("recordId")))


def to_jsonl(messages: Iterable[ConversationMessage]) -> bytes:
    return "".join(m.model_dump_json(by_alias=True, exclude_none=True) + "\n" for m in messages).encode()


def from_jsonl(data: bytes) -> list[ConversationMessage]:
    return [
        ConversationMessage.model_validate_json(line) for line in data.decode().splitlines() if line.strip()
    ]


def merge(
    transcript: Sequence[ConversationMessage], stored: Sequence[ConversationMessage]
) -> list[ConversationMessage]:
    """The transcript, then the messages still in the table that it does not hold (newer turns)."""
    seen = {m.message_id for m in transcript}
    return [*transcript, *(m for m in stored if m.message_id not in seen)]


class _S3Jsonl:
    what = "the object"

    def __init__(self, s3: Any, bucket: str) -> None:
        self._s3 = s3
        self._bucket = bucket

    def _object(self, key: str) -> bytes:
        try:
            return bytes(self._s3.get_object(Bucket=self._bucket, Key=key)["Body"].read())
        except Exception as exc:
            raise StorageUnavailable(f"Could not read {self.what}") from exc


class S3Transcripts(_S3Jsonl):
    what = "the transcript"

    def read(self, key: str) -> list[ConversationMessage]:
        return from_jsonl(self._object(key))


class S3AuditTrails(_S3Jsonl):
    what = "the audit trail"

    def read(self, key: str) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self._object(key).decode().splitlines() if line.strip()]
