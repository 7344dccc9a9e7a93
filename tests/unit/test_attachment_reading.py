"""Reading files into segments: documents parsed by page and section, and the outcome rules of the
pipeline with engines that answer as told (pure logic: the real engines are in the integration tests)."""

from __future__ import annotations

import io
import zipfile

import pytest

from rag_orchestrator.attachments import documents, pipeline
from rag_orchestrator.attachments.engines import Engines
from rag_orchestrator.attachments.pipeline import read_segments
from rag_orchestrator.attachments.uploads import EngineUnavailable, UnreadableFile, UnsupportedContent, Upload
from tests.fakes.attachments import DOCX, make_docx
from tests.fakes.pdf import make_pdf

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


def upload(content_type: str, body: bytes) -> Upload:
    return Upload("bucket", "attachments/a/c/x", content_type, len(body), fetch=lambda: body)


class Answers:
    """An engine that returns its text, or raises its failure."""

    def __init__(self, outcome: str | Exception) -> None:
        self.outcome = outcome

    def __call__(self, _: Upload) -> str:
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return self.outcome

    read_text = caption = transcribe = __call__


def test_a_pdf_is_a_segment_per_page_with_text():
    reading = read_segments(upload("application/pdf", make_pdf(["First page words."])), "document", Engines())
    assert [(s.modality, s.text, s.index) for s in reading.segments] == [("document", "First page words.", 0)]
    assert reading.notes == []


def test_markdown_splits_at_headings_but_not_inside_code_fences():
    text = "Intro line.\n# One\nBody.\n```\n# not a heading\n```\n## Two\nMore."
    assert documents.markdown_sections(text) == [
        "Intro line.",
        "# One\nBody.\n```\n# not a heading\n```",
        "## Two\nMore.",
    ]


def test_docx_sections_start_at_headings():
    body = make_docx([("Intro", ["Hello.", "World."]), ("Next", ["Done."])])
    assert documents.docx_sections(body) == ["Intro\nHello.\nWorld.", "Next\nDone."]


def test_broken_or_bombed_documents_are_refused(monkeypatch):
    with pytest.raises(UnreadableFile, match="DOCX"):
        documents.docx_sections(b"PK\x03\x04 not really a zip")
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/document.xml", "<a>" + " " * 5000 + "</a>")
    monkeypatch.setattr(documents, "MAX_DOCX_XML_BYTES", 1000)
    with pytest.raises(UnsupportedContent, match="too large"):
        documents.docx_sections(out.getvalue())
    with pytest.raises(UnreadableFile, match="UTF-8"):
        read_segments(upload("text/plain", b"\xff\xfe\xfa"), "document", Engines())


def test_long_texts_are_split_at_paragraphs_then_spaces():
    text = "a" * 3000 + "\n\n" + "b" * 3000
    assert documents.split_long(text) == ["a" * 3000, "b" * 3000]
    words = " ".join(["word"] * 2000)
    pieces = documents.split_long(words, limit=1000)
    assert all(len(p) <= 1000 for p in pieces) and " ".join(pieces) == words


def test_a_file_that_is_not_its_type_fails_before_any_engine():
    engines = Engines(ocr=Answers("never asked"))
    with pytest.raises(UnreadableFile, match="not a valid image/png"):
        read_segments(upload("image/png", b"GIF89a..."), "image", engines)
    with pytest.raises(UnreadableFile, match="audio/mpeg"):
        read_segments(upload("audio/mpeg", b"plain text"), "audio", engines)
    read_segments(upload("audio/mpeg", b"ID3\x04rest"), "audio", Engines())  # a real MP3 start passes


def test_modalities_without_an_engine_say_so_and_yield_nothing():
    reading = read_segments(upload("image/png", PNG), "image", Engines(caption=Answers("A cat on a mat.")))
    assert [(s.modality, s.text) for s in reading.segments] == [("image-caption", "A cat on a mat.")]
    assert reading.notes == ["image-ocr: no engine configured"]
    silent = read_segments(upload("audio/ogg", b"OggS"), "audio", Engines())
    assert (silent.segments, silent.notes) == ([], ["audio: no engine configured"])


def test_an_engine_that_fails_leaves_the_others_standing_or_fails_the_file_when_alone():
    engines = Engines(
        ocr=Answers("TOTAL 12.50"), caption=Answers(EngineUnavailable("the caption model did not answer"))
    )
    reading = read_segments(upload("image/png", PNG), "image", engines)
    assert [s.text for s in reading.segments] == ["TOTAL 12.50"]
    assert reading.notes == ["image-caption: engine unavailable: the caption model did not answer"]
    with pytest.raises(EngineUnavailable):
        read_segments(
            upload("audio/ogg", b"OggS"), "audio", Engines(speech=Answers(EngineUnavailable("down")))
        )
    with pytest.raises(
        UnreadableFile
    ):  # an engine that cannot decode the file fails it, whatever the others say
        read_segments(
            upload("image/png", PNG),
            "image",
            Engines(ocr=Answers(UnreadableFile("bad")), caption=Answers("x")),
        )


def test_an_image_without_text_is_ready_and_says_so():
    reading = read_segments(
        upload("image/png", PNG), "image", Engines(ocr=Answers("  "), caption=Answers("A sunset."))
    )
    assert [s.modality for s in reading.segments] == ["image-caption"]
    assert reading.notes == ["image-ocr: no text found"]


def test_the_text_of_one_attachment_is_bounded(monkeypatch):
    monkeypatch.setattr(pipeline, "MAX_TEXT_CHARS", 10)
    reading = read_segments(
        upload(DOCX, make_docx([("A", ["12345"]), ("B", ["67890"])])), "document", Engines()
    )
    assert [s.text for s in reading.segments] == ["A\n12345"]
    assert reading.notes == ["text beyond 10 characters dropped"]
