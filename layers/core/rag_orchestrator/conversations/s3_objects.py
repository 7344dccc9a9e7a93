"""The S3 writes and deletions of the archival job: objects written and verified, every version removed."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Iterable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from rag_orchestrator.errors import StorageUnavailable

S3_DELETE_BATCH = 1000
JSONL = "application/x-ndjson"


class ObjectStore:
    def __init__(self, s3: Any, bucket: str) -> None:
        self._s3 = s3
        self._bucket = bucket

    def put_verified(self, key: str, body: bytes) -> int:
        """Put a JSONL object, then check the stored object's size and SHA-256 against `body`."""
        digest = base64.b64encode(hashlib.sha256(body).digest()).decode()
        try:
            put = self._s3.put_object(
                Bucket=self._bucket,
                Key=key,
                Body=body,
                ContentType=JSONL,
                ChecksumAlgorithm="SHA256",
                ChecksumSHA256=digest,
            )
            version = {"VersionId": put["VersionId"]} if put.get("VersionId") else {}
            head = self._s3.head_object(Bucket=self._bucket, Key=key, ChecksumMode="ENABLED", **version)
        except (ClientError, BotoCoreError) as exc:
            raise StorageUnavailable(f"Could not store {key}") from exc
        if head.get("ContentLength") != len(body) or head.get("ChecksumSHA256") != digest:
            raise StorageUnavailable(f"The stored object {key} does not match what was written")
        return len(body)

    def delete_versions(self, prefix: str, *, exact: bool, keep: Callable[[str], bool] | None = None) -> int:
        """Every version and delete marker of `prefix` (the key itself when `exact`), of the keys `keep`
        accepts when given (domain/caller_keys.py: a prefix naming a caller holds others' keys too); how
        many there were."""
        found = []
        try:
            for page in self._s3.get_paginator("list_object_versions").paginate(
                Bucket=self._bucket, Prefix=prefix
            ):
                for entry in [*page.get("Versions", ()), *page.get("DeleteMarkers", ())]:
                    if (not exact or entry["Key"] == prefix) and (keep is None or keep(entry["Key"])):
                        found.append({"Key": entry["Key"], "VersionId": entry["VersionId"]})
        except (ClientError, BotoCoreError) as exc:
            raise StorageUnavailable("Could not list the objects to purge") from exc
        self.delete_objects(found)
        return len(found)

    def delete_objects(self, objects: Iterable[dict[str, str]]) -> None:
        pending = list(objects)
        for start in range(0, len(pending), S3_DELETE_BATCH):
            chunk = pending[start : start + S3_DELETE_BATCH]
            try:
                response = self._s3.delete_objects(
                    Bucket=self._bucket, Delete={"Objects": chunk, "Quiet": True}
                )
            except (ClientError, BotoCoreError) as exc:
                raise StorageUnavailable("Could not delete objects") from exc
            if response.get("Errors"):
                raise StorageUnavailable(f"Could not delete {len(response['Errors'])} objects")
