"""Full transcripts as JSONL in S3 (`transcripts/<callerId>/<conversationId>.jsonl`).

One ConversationMessage per line, reasoning included: this is internal storage, never a response.
The archival job writes them; reading an ARCHIVED conversation's messages reads them back.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

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


def merge(transcript: Sequence[ConversationMessage], stored: Sequence[ConversationMessage]) -> list:
    """The transcript, then the messages still in the table that it does not hold (newer turns)."""
    seen = {m.message_id for m in transcript}
    return [*transcript, *(m for m in stored if m.message_id not in seen)]


class Transcripts(Protocol):
    def write(self, caller_id: str, conversation_id: str, messages: Sequence[ConversationMessage]) -> str:
        """Store the transcript; returns its key."""
        ...

    def read(self, key: str) -> list[ConversationMessage]: ...


class S3Transcripts:
    def __init__(self, s3: Any, bucket: str) -> None:
        self._s3 = s3
        self._bucket = bucket

    def write(self, caller_id: str, conversation_id: str, messages: Sequence[ConversationMessage]) -> str:
        key = transcript_key(caller_id, conversation_id)
        try:
            self._s3.put_object(
                Bucket=self._bucket, Key=key, Body=to_jsonl(messages), ContentType="application/x-ndjson"
            )
        except Exception as exc:
            raise StorageUnavailable("Could not store the transcript") from exc
        return key

    def read(self, key: str) -> list[ConversationMessage]:
        try:
            data = self._s3.get_object(Bucket=self._bucket, Key=key)["Body"].read()
        except Exception as exc:
            raise StorageUnavailable("Could not read the transcript") from exc
        return from_jsonl(data)


class MemoryTranscripts:
    """The same contract in a dict, for CONVERSATION_STORAGE=memory."""

    def __init__(self) -> None:
        self._objects: dict[str, bytes] = {}

    def write(self, caller_id: str, conversation_id: str, messages: Sequence[ConversationMessage]) -> str:
        key = transcript_key(caller_id, conversation_id)
        self._objects[key] = to_jsonl(messages)
        return key

    def read(self, key: str) -> list[ConversationMessage]:
        if key not in self._objects:
            raise StorageUnavailable("Could not read the transcript")
        return from_jsonl(self._objects[key])
