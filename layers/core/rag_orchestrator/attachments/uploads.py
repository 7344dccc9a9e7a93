"""What every modality's engine reads (an Upload) and what it may fail with.

A failure carries a fixed, safe detail: never an engine's own message.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

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
