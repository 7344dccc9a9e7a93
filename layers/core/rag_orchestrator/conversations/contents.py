"""Texts too large for a DynamoDB item (a message's, an attachment's segments) live in S3; the item keeps a pointer."""

from __future__ import annotations

from typing import Any

from rag_orchestrator.errors import StorageUnavailable

# DynamoDB items are capped at 400 KB; the texts of one message get at most this much in-line.
OFFLOAD_BYTES = 300 * 1024
OFFLOADABLE = ("content", "reasoning")


def content_prefix(conversation_id: str) -> str:
    return f"contents/{conversation_id}/"


def content_key(conversation_id: str, item_id: str, field: str) -> str:
    return f"{content_prefix(conversation_id)}{item_id}.{field}.txt"


class ContentOffloader:
    """Moves the largest texts of an item to S3 until the rest fits, and brings them back.

    Objects live under the conversation's content prefix (purged with it), named by `id_field`."""

    def __init__(
        self, s3: Any, bucket: str, *, fields: tuple[str, ...] = OFFLOADABLE, id_field: str = "messageId"
    ) -> None:
        self._s3 = s3
        self._bucket = bucket
        self._fields = fields
        self._id_field = id_field

    def offload(self, values: dict[str, Any]) -> dict[str, Any]:
        sizes = {f: len(values[f].encode()) for f in self._fields if isinstance(values.get(f), str)}
        total = sum(sizes.values())
        for field in sorted(sizes, key=sizes.__getitem__, reverse=True):
            if total <= OFFLOAD_BYTES:
                break
            key = content_key(values["conversationId"], values[self._id_field], field)
            self._put(key, values.pop(field))
            values[f"{field}S3Key"] = key
            total -= sizes[field]
        return values

    def restore(self, values: dict[str, Any]) -> dict[str, Any]:
        for field in self._fields:
            key = values.pop(f"{field}S3Key", None)
            if key:
                values[field] = self._get(key)
        return values

    def _put(self, key: str, text: str) -> None:
        try:
            self._s3.put_object(
                Bucket=self._bucket, Key=key, Body=text.encode(), ContentType="text/plain; charset=utf-8"
            )
        except Exception as exc:
            raise StorageUnavailable("Could not store a large content") from exc

    def _get(self, key: str) -> str:
        try:
            return self._s3.get_object(Bucket=self._bucket, Key=key)["Body"].read().decode()
        except Exception as exc:
            raise StorageUnavailable("Could not read a large content") from exc
