"""What every modality's engine reads, what it may fail with, and the engines configuration chooses.

Each engine is one small interface; its backends live in ocr.py, captions.py, speech.py and
transcribe.py and are imported only when configured (rapidocr and pocketsphinx are not in the layer).
A failure carries a fixed, safe detail: never an engine's own message.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from rag_orchestrator.config import Settings

# Each audio type's format name, as Transcribe's MediaFormat and Whisper's file extensions have it.
AUDIO_FORMATS = {
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/mpeg": "mp3",
    "audio/mp4": "mp4",
    "audio/x-m4a": "m4a",
    "audio/ogg": "ogg",
    "audio/webm": "webm",
}


class ReadFailure(Exception):
    reason = "processing failed"

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail

    def __str__(self) -> str:
        return f"{self.reason}: {self.detail}"


class UnreadableFile(ReadFailure):
    reason = "unreadable file"


class UnsupportedContent(ReadFailure):
    reason = "unsupported content"


class EngineUnavailable(ReadFailure):
    reason = "engine unavailable"


class TooLarge(ReadFailure):
    reason = "too large"


@dataclass
class Upload:
    """One uploaded file: where it is, and its bytes, read once on first use."""

    bucket: str
    key: str
    content_type: str
    size: int
    fetch: Callable[[], bytes] = field(repr=False)
    version_id: str | None = None  # the version processing pinned (AWS engines read the key themselves)
    _body: bytes | None = field(default=None, repr=False)

    def body(self) -> bytes:
        if self._body is None:
            self._body = self.fetch()
        return self._body


class TextReader(Protocol):
    """OCR: the text printed in an image ("" when there is none)."""

    def read_text(self, upload: Upload) -> str: ...


class Captioner(Protocol):
    def caption(self, upload: Upload) -> str: ...


class Transcriber(Protocol):
    def transcribe(self, upload: Upload) -> str: ...


@dataclass(frozen=True)
class Engines:
    """None where configuration names no backend: that modality yields no segment, and says so."""

    ocr: TextReader | None = None
    caption: Captioner | None = None
    speech: Transcriber | None = None


def build_engines(settings: Settings) -> Engines:
    return Engines(ocr=_ocr(settings), caption=_captioner(settings), speech=_transcriber(settings))


def _ocr(settings: Settings) -> TextReader | None:
    match settings.attachment_ocr_backend:
        case "rapidocr":
            from rag_orchestrator.attachments.ocr import RapidOcrReader

            return RapidOcrReader()
        case "textract":
            from rag_orchestrator.attachments.ocr import TextractReader

            return TextractReader.from_settings(settings)
    return None


def _captioner(settings: Settings) -> Captioner | None:
    if settings.attachment_caption_backend == "openai_compatible":
        from rag_orchestrator.attachments.captions import VisionCaptioner

        return VisionCaptioner.from_settings(settings)
    return None


def _transcriber(settings: Settings) -> Transcriber | None:
    match settings.attachment_speech_backend:
        case "pocketsphinx":
            from rag_orchestrator.attachments.speech import PocketsphinxTranscriber

            return PocketsphinxTranscriber()
        case "whisper":
            from rag_orchestrator.attachments.speech import WhisperTranscriber

            return WhisperTranscriber.from_settings(settings)
        case "transcribe":
            from rag_orchestrator.attachments.transcribe import AwsTranscriber

            return AwsTranscriber.from_settings(settings)
    return None
