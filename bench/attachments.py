"""Reading attachments with the offline engines: seconds per PDF page, per image (OCR), per audio minute.

The engines of `make dev` and the tests (rapidocr, pocketsphinx; dev dependencies), on the files the
tests use: PDF pages with a paragraph each, a 900x250 PNG with three lines of words, and the spoken
fixture (tests/data/attachments/speech.wav) repeated with pauses into one minute. Loading each engine's
models happens once per process and is reported apart.
"""

from __future__ import annotations

import io
import time
import wave

from bench.report import Section

PAGES = 20
AUDIO_SECONDS = 60


def _upload(content_type: str, body: bytes):
    from rag_orchestrator.attachments.uploads import Upload

    return Upload("bench", "attachments/bench/c/a", content_type, len(body), fetch=lambda: body)


def pdf(pages: int, lines: int = 20, line: str = "The lamp, lens and clockwork were checked.") -> bytes:
    """A PDF of `pages` pages, each a heading and `lines` times `line`."""
    from pypdf import PdfReader, PdfWriter

    from tests.fakes.pdf import make_pdf

    writer = PdfWriter()
    for number in range(pages):
        text = [f"Page {number + 1} of the maintenance log."] + [line] * lines
        writer.add_page(PdfReader(io.BytesIO(make_pdf(text))).pages[0])
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def minute_of_speech() -> bytes:
    from tests.fakes.attachments import SPEECH_WAV

    with wave.open(str(SPEECH_WAV)) as reader:
        params, frames = reader.getparams(), reader.readframes(reader.getnframes())
    pause = b"\x00\x00" * (params.framerate // 2)
    wanted = AUDIO_SECONDS * params.framerate * 2
    joined = b""
    while len(joined) < wanted:
        joined += frames + pause
    out = io.BytesIO()
    with wave.open(out, "wb") as writer:
        writer.setparams(params)
        writer.writeframes(joined[:wanted])
    return out.getvalue()


def run(quick: bool = False) -> Section:
    from rag_orchestrator.attachments.documents import read_document
    from rag_orchestrator.attachments.ocr import RapidOcrReader, _rapidocr
    from rag_orchestrator.attachments.speech import PocketsphinxTranscriber, _decoder
    from tests.fakes.attachments import render_png

    section = Section("attachments", packages=["rapidocr", "onnxruntime", "pocketsphinx", "pypdf"])
    rounds = 1 if quick else 5

    document = _upload("application/pdf", pdf(PAGES))
    per_page = []
    for _ in range(rounds):
        started = time.perf_counter()
        segments = read_document(document)
        per_page.append((time.perf_counter() - started) / PAGES)
    section.add(
        "PDF: seconds per page (pypdf)", "s", per_page, note=f"{PAGES} pages, {len(segments)} segments"
    )

    started = time.perf_counter()
    _rapidocr()
    section.add("OCR engine load, once per process (rapidocr)", "s", time.perf_counter() - started)
    image = _upload(
        "image/png", render_png(["INVOICE 4711 due 30 June", "Paid by Alice Martin", "Total 1,250.00 EUR"])
    )
    reader, per_image = RapidOcrReader(), []
    for _ in range(rounds):
        started = time.perf_counter()
        text = reader.read_text(image)
        per_image.append(time.perf_counter() - started)
    section.add(
        "image: seconds per image, OCR (rapidocr)",
        "s",
        per_image,
        note=f"900x250 PNG, {len(text)} chars read",
    )

    started = time.perf_counter()
    _decoder()
    section.add("speech decoder load, once per process (pocketsphinx)", "s", time.perf_counter() - started)
    audio = _upload("audio/wav", minute_of_speech())
    transcriber, per_minute = PocketsphinxTranscriber(), []
    for _ in range(1 if quick else 3):
        started = time.perf_counter()
        transcript = transcriber.transcribe(audio)
        per_minute.append((time.perf_counter() - started) / (AUDIO_SECONDS / 60))
    section.add(
        "audio: seconds per audio minute (pocketsphinx)",
        "s",
        per_minute,
        note=f"{len(transcript.split())} words heard",
    )
    return section
