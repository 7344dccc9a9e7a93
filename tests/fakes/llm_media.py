"""What the fake LLM server needs for images and audio: content-part checks, whole (non-streamed)
completions, and Whisper-style `/audio/transcriptions` uploads."""

from __future__ import annotations

import base64
import binascii
import email.parser
import email.policy
import re
from dataclasses import dataclass
from typing import Any

from tests.fakes.llm_script import Data, Stream

_DATA_URL = re.compile(r"data:(?P<mime>[\w.+-]+/[\w.+-]+);base64,(?P<data>[A-Za-z0-9+/=]+)\Z")


@dataclass(frozen=True)
class Image:
    """An image content part as received: its MIME type and its decoded bytes (or its https URL)."""

    mime: str
    data: bytes
    url: str | None = None


def images_in(request: dict[str, Any]) -> list[Image]:
    """Every image content part of a chat request; ValueError naming the first malformed part."""
    found = []
    for message in request.get("messages", []):
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text" and isinstance(part.get("text"), str):
                continue
            url = (part.get("image_url") or {}).get("url") if kind == "image_url" else None
            if not isinstance(url, str):
                raise ValueError(f"Invalid content part: {str(part)[:80]}")
            if url.startswith("https://"):
                found.append(Image("", b"", url))
                continue
            match = _DATA_URL.match(url)
            if not match:
                raise ValueError("Invalid image_url: expected a base64 data URL or an https URL")
            try:
                found.append(Image(match["mime"], base64.b64decode(match["data"], validate=True)))
            except binascii.Error:
                raise ValueError("Invalid image_url: the base64 data does not decode") from None
    return found


def completion_body(reply: Stream) -> dict[str, Any]:
    """A scripted streamed reply as one `chat.completion` object (for requests with `stream: false`)."""
    text = "".join(
        (choice.get("delta") or {}).get("content") or ""
        for part in reply.parts
        if isinstance(part, Data) and isinstance(part.payload, dict)
        for choice in part.payload.get("choices", [])
    )
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "model": "fake",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


def form_fields(content_type: str, body: bytes) -> dict[str, tuple[str | None, bytes]]:
    """A multipart/form-data body as name -> (file name or None, value bytes)."""
    head = f"Content-Type: {content_type}\r\n\r\n".encode()
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + body)
    fields = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        fields[str(name)] = (part.get_filename(), part.get_payload(decode=True) or b"")
    return fields
