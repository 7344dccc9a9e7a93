"""Full transcripts as JSONL in S3 (`transcripts/<callerId>/<conversationId>.jsonl`).

One ConversationMessage per line, reasoning included: this is internal storage, never a response.
The archival job writes them (archive_steps.py); reading an ARCHIVED conversation's messages reads them
back.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from rag_orchestrator.domain.conversations import ConversationMessage
from rag_orchestrator.errors import StorageUnavailable


def transcript_key(caller_id: str, conversation_id: str) -> str:
    return f"transcripts/{caller_id}/{conversation_id}.jsonl"


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


class S3Transcripts:
    def __init__(self, s3: Any, bucket: str) -> None:
        self._s3 = s3
        self._bucket = bucket

    def read(self, key: str) -> list[ConversationMessage]:
        try:
            data = self._s3.get_object(Bucket=self._bucket, Key=key)["Body"].read()
        except Exception as exc:
            raise StorageUnavailable("Could not read the transcript") from exc
        return from_jsonl(data)
