"""Speech to text: pocketsphinx (offline, English, WAV; dev and tests) and any Whisper-compatible endpoint."""

from __future__ import annotations

import io
import threading
import wave
from functools import lru_cache
from typing import Any

import httpx

from rag_orchestrator import tls
from rag_orchestrator.attachments.uploads import (
    AUDIO_FORMATS,
    EngineUnavailable,
    UnreadableFile,
    UnsupportedContent,
    Upload,
)
from rag_orchestrator.config import Settings
from rag_orchestrator.observability import logger

SAMPLE_RATE = 16_000  # the en-us acoustic model's
WAV_TYPES = frozenset({"audio/wav", "audio/x-wav", "audio/wave"})


def pcm16_mono(body: bytes) -> bytes:
    """A 16-bit PCM WAV as 16 kHz mono samples (channels averaged, resampled linearly)."""
    import numpy as np

    try:
        with wave.open(io.BytesIO(body)) as reader:
            channels, width, rate = reader.getnchannels(), reader.getsampwidth(), reader.getframerate()
            frames = reader.readframes(reader.getnframes())
    except (wave.Error, EOFError, ValueError):
        raise UnreadableFile("the WAV file could not be decoded") from None
    if width != 2:
        raise UnsupportedContent("the offline speech engine reads 16-bit PCM WAV only")
    samples = np.frombuffer(frames[: len(frames) - len(frames) % (2 * channels)], dtype="<i2")
    mono = samples.reshape(-1, channels).mean(axis=1)
    if rate != SAMPLE_RATE and len(mono):
        positions = np.arange(0, len(mono), rate / SAMPLE_RATE)
        mono = np.interp(positions, np.arange(len(mono)), mono)
    return mono.astype("<i2").tobytes()


WINDOW_SECONDS = 20  # one utterance at most this long: pocketsphinx slows down on longer ones
QUIET_SEARCH_SECONDS = 5  # where in a window's end to look for the quietest moment to cut at


def windows(pcm: bytes) -> list[bytes]:
    """16 kHz samples in pieces of at most WINDOW_SECONDS, cut at the quietest 0.1 s near each end.

    Whole utterances, not pocketsphinx's VAD segments: the segmenter clips word onsets, and short
    pieces lose the language model's context (the fixture's transcript went from right to garbled)."""
    import numpy as np

    samples = np.frombuffer(pcm, dtype="<i2").astype(np.float32)
    window, search, frame = (
        WINDOW_SECONDS * SAMPLE_RATE,
        QUIET_SEARCH_SECONDS * SAMPLE_RATE,
        SAMPLE_RATE // 10,
    )
    pieces, start = [], 0
    while len(samples) - start > window:
        tail = samples[start + window - search : start + window]
        energy = np.abs(tail[: len(tail) // frame * frame]).reshape(-1, frame).mean(axis=1)
        cut = start + window - search + int(np.argmin(energy)) * frame + frame // 2
        pieces.append(pcm[start * 2 : cut * 2])
        start = cut
    pieces.append(pcm[start * 2 :])
    return pieces


@lru_cache(maxsize=1)
def _decoder() -> Any:
    from pocketsphinx import Decoder

    return Decoder(samprate=SAMPLE_RATE, loglevel="FATAL")  # the en-us model inside the wheel


class PocketsphinxTranscriber:
    _lock = threading.Lock()  # one decoder per process, one utterance at a time

    def transcribe(self, upload: Upload) -> str:
        if upload.content_type not in WAV_TYPES:
            raise UnsupportedContent("the offline speech engine reads WAV only")
        utterances = []
        with self._lock:
            decoder = _decoder()
            for piece in windows(pcm16_mono(upload.body())):
                decoder.start_utt()
                decoder.process_raw(piece, full_utt=True)
                decoder.end_utt()
                hypothesis = decoder.hyp()
                if hypothesis is not None and hypothesis.hypstr.strip():
                    utterances.append(hypothesis.hypstr.strip())
        return "\n".join(utterances)


class WhisperTranscriber:
    """POST {base}/audio/transcriptions (multipart: file, model), as OpenAI and compatible servers take it."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None,
        *,
        timeout_seconds: float = 120.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._url = base_url.rstrip("/") + "/audio/transcriptions"
        self._model = model
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout = timeout_seconds
        self._transport = transport

    @classmethod
    def from_settings(cls, settings: Settings) -> WhisperTranscriber:
        return cls(
            settings.attachment_whisper_base_url or "",
            settings.attachment_whisper_model,
            settings.secret("attachment_whisper_api_key"),
            timeout_seconds=settings.model_timeout_seconds,
        )

    def transcribe(self, upload: Upload) -> str:
        name = f"audio.{AUDIO_FORMATS.get(upload.content_type, 'bin')}"  # servers go by the extension
        files = {"file": (name, upload.body(), upload.content_type)}
        data = {"model": self._model, "response_format": "json"}
        try:
            with httpx.Client(timeout=self._timeout, verify=tls.context(), transport=self._transport) as http:
                response = http.post(self._url, files=files, data=data, headers=self._headers)
        except httpx.HTTPError as exc:
            logger.warning("speech endpoint unreachable", extra={"error_type": type(exc).__name__})
            raise EngineUnavailable("the speech engine did not answer") from None
        if response.status_code >= 400:
            logger.warning("speech endpoint refused", extra={"status": response.status_code})
            raise EngineUnavailable("the speech engine did not answer")
        try:
            return str(response.json().get("text") or "").strip()
        except (ValueError, AttributeError):
            raise EngineUnavailable("the speech engine answered without a transcript") from None
