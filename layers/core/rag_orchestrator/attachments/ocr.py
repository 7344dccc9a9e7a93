"""OCR backends: rapidocr (offline, its models in its wheel; dev and tests) and Amazon Textract."""

from __future__ import annotations

import io
import threading
from functools import lru_cache
from typing import Any

from rag_orchestrator.attachments.uploads import EngineUnavailable, UnreadableFile, UnsupportedContent, Upload
from rag_orchestrator.aws import AwsClients
from rag_orchestrator.observability import logger

MIN_SCORE = 0.5  # rapidocr's confidence below which a line is more likely noise than text
TEXTRACT_TYPES = frozenset({"image/png", "image/jpeg"})  # DetectDocumentText reads no WEBP


@lru_cache(maxsize=1)
def _rapidocr() -> Any:
    """One engine per process: loading its models takes seconds."""
    from rapidocr import RapidOCR

    return RapidOCR(params={"Global.log_level": "warning"})  # its own INFO lines would flood the logs


class RapidOcrReader:
    _lock = threading.Lock()  # one inference at a time: the engine is not documented as thread-safe

    def read_text(self, upload: Upload) -> str:
        import numpy as np
        from PIL import Image, UnidentifiedImageError

        try:
            with Image.open(io.BytesIO(upload.body())) as image:
                pixels = np.asarray(image.convert("RGB"))[:, :, ::-1]  # BGR, as OpenCV reads
        except Image.DecompressionBombError:
            raise UnsupportedContent("the image has too many pixels") from None
        except (UnidentifiedImageError, OSError, ValueError, SyntaxError):
            raise UnreadableFile("the image could not be decoded") from None
        with self._lock:
            result = _rapidocr()(pixels)
        lines = [
            text
            for text, score in zip(result.txts or (), result.scores or (), strict=False)
            if score >= MIN_SCORE and text.strip()
        ]
        return "\n".join(lines)


class TextractReader:
    """DetectDocumentText on the S3 object itself: the function never downloads the image."""

    def __init__(self, textract: Any) -> None:
        self._textract = textract

    @classmethod
    def from_settings(cls, aws: AwsClients) -> TextractReader:
        return cls(aws.lazy("textract"))

    def read_text(self, upload: Upload) -> str:
        from botocore.exceptions import BotoCoreError, ClientError

        if upload.content_type not in TEXTRACT_TYPES:
            raise UnsupportedContent("OCR reads PNG and JPEG images only")
        try:
            response = self._textract.detect_document_text(Document={"S3Object": _s3_object(upload)})
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code in ("UnsupportedDocumentException", "BadDocumentException", "InvalidParameterException"):
                raise UnreadableFile("the image could not be read") from None
            if code == "DocumentTooLargeException":
                raise UnsupportedContent("the image is too large for OCR") from None
            logger.warning("textract failed", extra={"code": code})
            raise EngineUnavailable("OCR failed") from None
        except BotoCoreError as exc:
            logger.warning("textract unreachable", extra={"error_type": type(exc).__name__})
            raise EngineUnavailable("OCR failed") from None
        lines = [b.get("Text", "") for b in response.get("Blocks", ()) if b.get("BlockType") == "LINE"]
        return "\n".join(line for line in lines if line.strip())


def _s3_object(upload: Upload) -> dict[str, str]:
    """Textract's S3Object: the version processing pinned, where the bucket keeps versions."""
    pinned = {"Version": upload.version_id} if upload.version_id and upload.version_id != "null" else {}
    return {"Bucket": upload.bucket, "Name": upload.key, **pinned}
