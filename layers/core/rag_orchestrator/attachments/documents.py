"""Documents into text segments: a PDF by page, Markdown and DOCX by section, plain text by paragraphs.

DOCX is read as what it is, a zip of WordprocessingML, with the standard library: python-docx (and
lxml) would add ~10 MB to every function for what a few lines do here.
"""

from __future__ import annotations

import io
import re
import zipfile
from xml.etree import ElementTree

from rag_orchestrator.attachments.uploads import UnreadableFile, UnsupportedContent, Upload

SEGMENT_CHARS = 4000  # a longer page or section is split at paragraph ends
MAX_DOCX_XML_BYTES = 50 * 1024 * 1024  # word/document.xml unpacked: more is a zip bomb, not a document
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_HEADING = re.compile(r"^(Heading|Title)", re.IGNORECASE)


def read_document(upload: Upload) -> list[str]:
    """The document's text, one item per segment, in reading order; empty when it has no text."""
    body = upload.body()
    match upload.content_type:
        case "application/pdf":
            sections = pdf_pages(body)
        case "text/markdown":
            sections = markdown_sections(decode_text(body))
        case "text/plain":
            sections = [decode_text(body)]
        case _ if upload.content_type == DOCX:
            sections = docx_sections(body)
        case _:
            raise UnsupportedContent("not a document type")
    return [piece for section in sections for piece in split_long(section.strip()) if piece]


def decode_text(body: bytes) -> str:
    try:
        return body.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UnreadableFile("the text is not UTF-8") from None


def pdf_pages(body: bytes) -> list[str]:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(body))
        if reader.is_encrypted:
            raise UnsupportedContent("the PDF is encrypted")
        return [page.extract_text() or "" for page in reader.pages]
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, IndexError):
        raise UnreadableFile("the PDF could not be parsed") from None


def markdown_sections(text: str) -> list[str]:
    """A new section at every heading line (outside fenced code)."""
    sections: list[list[str]] = [[]]
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if not fenced and re.match(r"#{1,6}\s", line) and any(s.strip() for s in sections[-1]):
            sections.append([])
        sections[-1].append(line)
    return ["\n".join(lines) for lines in sections]


def docx_sections(body: bytes) -> list[str]:
    """Paragraph texts of word/document.xml; a heading-styled paragraph starts a section."""
    try:
        with zipfile.ZipFile(io.BytesIO(body)) as archive:
            info = archive.getinfo("word/document.xml")
            if info.file_size > MAX_DOCX_XML_BYTES:
                raise UnsupportedContent("the document's text is too large")
            root = ElementTree.fromstring(archive.read(info))
    except (zipfile.BadZipFile, KeyError, ElementTree.ParseError, EOFError):
        raise UnreadableFile("the DOCX could not be parsed") from None
    sections: list[list[str]] = [[]]
    for paragraph in root.iter(f"{_W}p"):
        style = paragraph.find(f"{_W}pPr/{_W}pStyle")
        heading = style is not None and _HEADING.match(style.get(f"{_W}val", "")) is not None
        if heading and sections[-1]:
            sections.append([])
        text = "".join(_run_text(node) for node in paragraph.iter() if node.tag in _RUN_TAGS)
        if text.strip():
            sections[-1].append(text)
    return ["\n".join(paragraphs) for paragraphs in sections]


_RUN_TAGS = {f"{_W}t", f"{_W}tab", f"{_W}br", f"{_W}cr"}


def _run_text(node: ElementTree.Element) -> str:
    return node.text or "" if node.tag == f"{_W}t" else ("\t" if node.tag == f"{_W}tab" else "\n")


def split_long(text: str, limit: int = SEGMENT_CHARS) -> list[str]:
    """`text` in pieces of at most `limit` characters, cut at paragraph ends, else at spaces."""
    pieces: list[str] = []
    rest = text
    while len(rest) > limit:
        cut = rest.rfind("\n\n", 0, limit)
        if cut < limit // 2:
            cut = rest.rfind(" ", 0, limit)
        if cut < limit // 2:
            cut = limit
        pieces.append(rest[:cut].strip())
        rest = rest[cut:].strip()
    pieces.append(rest)
    return [p for p in pieces if p]
