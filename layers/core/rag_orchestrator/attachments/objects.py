"""The attachments bucket: presigned POSTs that pin key, type and exact size; HEAD and reads of uploads,
pinned to the object a HEAD saw (its ETag, and its version where the bucket keeps versions)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from rag_orchestrator.errors import StorageUnavailable
from rag_orchestrator.observability import logger

MISSING = ("404", "NoSuchKey", "NotFound")


@dataclass(frozen=True, slots=True)
class StoredObject:
    size: int
    content_type: str
    etag: str | None = None
    version_id: str | None = None  # None, or S3's "null", where the bucket keeps no versions


def _version(version_id: str | None) -> dict[str, str]:
    return {"VersionId": version_id} if version_id and version_id != "null" else {}


class AttachmentObjects:
    def __init__(self, s3: Any, bucket: str) -> None:
        self._s3 = s3
        self.bucket = bucket

    def presign_post(self, key: str, content_type: str, size: int, expires_in: int) -> dict[str, Any]:
        """`{url, fields}` for one multipart POST of exactly this key, type and size in bytes."""
        try:
            return self._s3.generate_presigned_post(
                Bucket=self.bucket,
                Key=key,
                Fields={"Content-Type": content_type},
                Conditions=[{"Content-Type": content_type}, ["content-length-range", size, size]],
                ExpiresIn=expires_in,
            )
        except (ClientError, BotoCoreError) as exc:  # signing needs credentials, nothing else
            logger.error("could not presign an upload", extra={"error_type": type(exc).__name__})
            raise StorageUnavailable("Uploads are unavailable") from exc

    def presign_get(self, key: str, expires_in: int, version_id: str | None = None) -> str:
        """A URL that reads this one object (this version of it, when given) until it expires,
        signed with the function's own rights."""
        params = {"Bucket": self.bucket, "Key": key, **_version(version_id)}
        try:
            return str(self._s3.generate_presigned_url("get_object", Params=params, ExpiresIn=expires_in))
        except (ClientError, BotoCoreError) as exc:
            logger.error("could not presign a download", extra={"error_type": type(exc).__name__})
            raise StorageUnavailable("Attachment downloads are unavailable") from exc

    def head(self, key: str) -> StoredObject | None:
        """The uploaded object's size and type; None before the upload."""
        try:
            response = self._s3.head_object(Bucket=self.bucket, Key=key)
        except ClientError as exc:
            if str(exc.response.get("Error", {}).get("Code")) in MISSING:
                return None
            raise StorageUnavailable() from exc
        except BotoCoreError as exc:
            raise StorageUnavailable() from exc
        return StoredObject(
            int(response.get("ContentLength", 0)),
            response.get("ContentType") or "",
            response.get("ETag"),
            response.get("VersionId"),
        )

    def read(self, key: str, pinned: StoredObject | None = None) -> bytes:
        """The object's bytes; with `pinned`, those of the object that HEAD saw, or StorageUnavailable
        (another upload in between: a later attempt reads the key again)."""
        params: dict[str, Any] = {"Bucket": self.bucket, "Key": key}
        if pinned is not None:
            params |= _version(pinned.version_id) | ({"IfMatch": pinned.etag} if pinned.etag else {})
        try:
            return self._s3.get_object(**params)["Body"].read()
        except (ClientError, BotoCoreError) as exc:
            raise StorageUnavailable("Could not read an attachment") from exc

    def delete(self, key: str) -> None:
        try:
            self._s3.delete_object(Bucket=self.bucket, Key=key)
        except (ClientError, BotoCoreError) as exc:
            logger.warning("could not delete an object", extra={"key": key, "error_type": type(exc).__name__})
