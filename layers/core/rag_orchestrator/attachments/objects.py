"""The attachments bucket: presigned POSTs that pin key, type and size; HEAD and reads of uploads."""

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


class AttachmentObjects:
    def __init__(self, s3: Any, bucket: str) -> None:
        self._s3 = s3
        self.bucket = bucket

    def presign_post(self, key: str, content_type: str, max_bytes: int, expires_in: int) -> dict[str, Any]:
        """`{url, fields}` for one multipart POST of exactly this key and type, 1..max_bytes long."""
        try:
            return self._s3.generate_presigned_post(
                Bucket=self.bucket,
                Key=key,
                Fields={"Content-Type": content_type},
                Conditions=[{"Content-Type": content_type}, ["content-length-range", 1, max_bytes]],
                ExpiresIn=expires_in,
            )
        except (ClientError, BotoCoreError) as exc:  # signing needs credentials, nothing else
            logger.error("could not presign an upload", extra={"error_type": type(exc).__name__})
            raise StorageUnavailable("Uploads are unavailable") from exc

    def presign_get(self, key: str, expires_in: int) -> str:
        """A URL that reads this one object until it expires (signed with the function's own rights)."""
        try:
            return str(
                self._s3.generate_presigned_url(
                    "get_object", Params={"Bucket": self.bucket, "Key": key}, ExpiresIn=expires_in
                )
            )
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
        return StoredObject(int(response.get("ContentLength", 0)), response.get("ContentType") or "")

    def read(self, key: str) -> bytes:
        try:
            return self._s3.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        except (ClientError, BotoCoreError) as exc:
            raise StorageUnavailable("Could not read an attachment") from exc

    def delete(self, key: str) -> None:
        try:
            self._s3.delete_object(Bucket=self.bucket, Key=key)
        except (ClientError, BotoCoreError) as exc:
            logger.warning("could not delete an object", extra={"key": key, "error_type": type(exc).__name__})
