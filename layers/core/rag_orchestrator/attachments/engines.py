"""The engines configuration chooses, one small interface per modality.

Their backends live in ocr.py, captions.py, speech.py and transcribe.py and are imported only when
configured (rapidocr and pocketsphinx are not in the layer); what they read and may fail with is
uploads.py's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from rag_orchestrator.attachments.uploads import Upload
from rag_orchestrator.aws import AwsClients
from rag_orchestrator.config import Settings


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


def build_engines(settings: Settings, aws: AwsClients) -> Engines:
    return Engines(ocr=_ocr(settings, aws), caption=_captioner(settings), speech=_transcriber(settings, aws))


def _ocr(settings: Settings, aws: AwsClients) -> TextReader | None:
    match settings.attachment_ocr_backend:
        case "rapidocr":
            from rag_orchestrator.attachments.ocr import RapidOcrReader

            return RapidOcrReader()
        case "textract":
            from rag_orchestrator.attachments.ocr import TextractReader

            return TextractReader.from_settings(aws)
    return None


def _captioner(settings: Settings) -> Captioner | None:
    if settings.attachment_caption_backend == "openai_compatible":
        from rag_orchestrator.attachments.captions import VisionCaptioner

        return VisionCaptioner.from_settings(settings)
    return None


def _transcriber(settings: Settings, aws: AwsClients) -> Transcriber | None:
    match settings.attachment_speech_backend:
        case "pocketsphinx":
            from rag_orchestrator.attachments.speech import PocketsphinxTranscriber

            return PocketsphinxTranscriber()
        case "whisper":
            from rag_orchestrator.attachments.speech import WhisperTranscriber

            return WhisperTranscriber.from_settings(settings)
        case "transcribe":
            from rag_orchestrator.attachments.transcribe import AwsTranscriber

            return AwsTranscriber.from_settings(settings, aws)
    return None
