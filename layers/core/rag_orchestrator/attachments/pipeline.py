"""One uploaded file into text segments, by kind: documents parsed, images OCR'd and captioned, audio
transcribed. A blocking function (engines compute or wait on AWS): callers run it in a worker thread.

Outcome rules: a file that is not what its type says, or that no engine can decode, FAILs the whole
attachment. A modality with no engine, or whose engine cannot help, yields no segment and a note in
`detail`; the attachment FAILs only when nothing was read and some engine failed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from rag_orchestrator.attachments.documents import read_document, split_long
from rag_orchestrator.attachments.engines import Engines
from rag_orchestrator.attachments.uploads import ReadFailure, UnreadableFile, Upload
from rag_orchestrator.domain.attachments import Kind, Modality, Segment

MAX_TEXT_CHARS = 1_000_000  # of all segments together; the rest of a huge document is dropped, and said so

# Leading bytes of each type (offset, signature): a PNG that is not a PNG is refused before any engine.
SIGNATURES: dict[str, tuple[tuple[int, bytes], ...]] = {
    "image/png": ((0, b"\x89PNG\r\n\x1a\n"),),
    "image/jpeg": ((0, b"\xff\xd8\xff"),),
    "image/webp": ((0, b"RIFF"), (8, b"WEBP")),
    "audio/wav": ((0, b"RIFF"), (8, b"WAVE")),
    "audio/x-wav": ((0, b"RIFF"), (8, b"WAVE")),
    "audio/wave": ((0, b"RIFF"), (8, b"WAVE")),
    "audio/ogg": ((0, b"OggS"),),
    "audio/webm": ((0, b"\x1a\x45\xdf\xa3"),),
    "audio/mp4": ((4, b"ftyp"),),
    "audio/x-m4a": ((4, b"ftyp"),),
    "application/pdf": ((0, b"%PDF-"),),
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ((0, b"PK\x03\x04"),),
}


@dataclass
class Reading:
    segments: list[Segment] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    failures: list[ReadFailure] = field(default_factory=list)

    def add(self, modality: Modality, texts: list[str]) -> None:
        if not texts:
            self.notes.append(f"{modality.value}: no text found")
        for index, text in enumerate(texts):
            self.segments.append(Segment(modality=modality, text=text, index=index))

    def attempt(self, modality: Modality, engine: Callable[[Upload], str] | None, upload: Upload) -> None:
        """One engine's text as segments, or a note saying why there is none."""
        if engine is None:
            self.notes.append(f"{modality.value}: no engine configured")
            return
        try:
            text = engine(upload).strip()
        except UnreadableFile:
            raise
        except ReadFailure as failure:
            self.failures.append(failure)
            self.notes.append(f"{modality.value}: {failure}")
            return
        self.add(modality, split_long(text))


def check_signature(upload: Upload) -> None:
    head = upload.body()[:16]
    for offset, signature in SIGNATURES.get(upload.content_type, ()):
        if head[offset : offset + len(signature)] != signature:
            raise UnreadableFile(f"the file is not a valid {upload.content_type} file")
    if upload.content_type == "audio/mpeg" and not (head.startswith(b"ID3") or head[:1] == b"\xff"):
        raise UnreadableFile("the file is not a valid audio/mpeg file")


def read_segments(upload: Upload, kind: Kind, engines: Engines) -> Reading:
    """The segments of one file; raises ReadFailure when the attachment must FAIL."""
    check_signature(upload)
    reading = Reading()
    match kind:
        case "document":
            reading.add(Modality.DOCUMENT, read_document(upload))
        case "image":
            reading.attempt(Modality.IMAGE_OCR, engines.ocr.read_text if engines.ocr else None, upload)
            reading.attempt(
                Modality.IMAGE_CAPTION, engines.caption.caption if engines.caption else None, upload
            )
        case "audio":
            reading.attempt(Modality.AUDIO, engines.speech.transcribe if engines.speech else None, upload)
    if reading.failures and not reading.segments:
        raise reading.failures[0]
    _bound(reading)
    return reading


def _bound(reading: Reading) -> None:
    total = 0
    for position, segment in enumerate(reading.segments):
        total += len(segment.text)
        if total > MAX_TEXT_CHARS:
            del reading.segments[position:]
            reading.notes.append(f"text beyond {MAX_TEXT_CHARS} characters dropped")
            return
