"""Attachment fixtures made on the spot: a PNG with known words, a DOCX, and the upload a browser sends."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import httpx

SPEECH_WAV = Path(__file__).resolve().parents[1] / "data" / "attachments" / "speech.wav"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


def render_png(lines: list[str], *, width: int = 900, line_height: int = 70) -> bytes:
    """Black words on white, large and plain: what an OCR engine reads without doubt."""
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("RGB", (width, 40 + line_height * len(lines)), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=40)
    for number, line in enumerate(lines):
        draw.text((30, 20 + number * line_height), line, fill="black", font=font)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def make_docx(sections: list[tuple[str, list[str]]]) -> bytes:
    """A minimal WordprocessingML package: each section a Heading1 paragraph and body paragraphs."""
    w = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'

    def paragraph(text: str, style: str | None = None) -> str:
        props = f'<w:pPr><w:pStyle w:val="{style}"/></w:pPr>' if style else ""
        return f'<w:p>{props}<w:r><w:t xml:space="preserve">{text}</w:t></w:r></w:p>'

    body = "".join(
        paragraph(heading, "Heading1") + "".join(paragraph(p) for p in paragraphs)
        for heading, paragraphs in sections
    )
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr(
            "[Content_Types].xml",
            '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-'
            'officedocument.wordprocessingml.document.main+xml"/></Types>',
        )
        archive.writestr(
            "word/document.xml", f'<?xml version="1.0"?><w:document {w}><w:body>{body}</w:body></w:document>'
        )
    return out.getvalue()


def post_upload(upload: dict[str, Any], body: bytes, file_name: str = "file") -> httpx.Response:
    """The multipart POST a browser or `curl -F` sends to a presigned S3 POST: fields first, then the file."""
    content_type = upload["fields"].get("Content-Type", "application/octet-stream")
    return httpx.post(upload["url"], data=upload["fields"], files={"file": (file_name, body, content_type)})
