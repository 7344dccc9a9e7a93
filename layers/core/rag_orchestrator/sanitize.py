"""Sanitising text that ends up in prompts: metadata is data, never instructions.

Used at ingestion on every metadata value, and by the answer endpoint on whatever it puts in a prompt.
Neutralising keeps the words readable for a human but breaks the shapes a model treats as commands:
role prefixes and chat-template tags, "ignore previous instructions" and its kin, code fences.
"""

from __future__ import annotations

import re
import unicodedata

MAX_TITLE = 200
MAX_SOURCE = 200
MAX_TAG = 64
MAX_TAGS = 20
MAX_DOCUMENT_ID = 256

FILTERED = "[filtered]"

# Control and format characters (C0, C1, zero-width, bidi overrides); \n and \t survive in body text.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]")
_WHITESPACE = re.compile(r"\s+")

_INSTRUCTION_PATTERNS = [
    # "ignore/disregard/forget (all) (the) previous/prior/above instructions|prompts|rules|context"
    r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+|the\s+|your\s+|of\s+)*"
    r"(?:previous|prior|above|earlier|preceding|system|original|these|those)?\s*"
    r"(?:instructions?|prompts?|rules|directions|context|guidelines)\b",
    r"\b(?:new|updated|real)\s+(?:system\s+)?instructions?\s*:",
    r"\byou\s+are\s+now\b",
    r"\bfrom\s+now\s+on\s*,?\s+you\b",
    # chat-template and role tags: <|im_start|>, <|system|>, <system>, </assistant>, [INST], <<SYS>>
    r"<\|[^|>]{0,40}\|>",
    r"</?\s*(?:system|assistant|user|developer|tool|instructions?)\s*>",
    r"\[/?INST\]",
    r"<</?SYS>>",
    # role prefixes and markdown headings that open an instruction block
    r"(?:^|(?<=[\s>\-*#]))(?:system|assistant|developer|user|human|ai)\s*:",
    r"#{1,6}\s*(?:system|instructions?|prompt)\b\s*:?",
    # code fences, which can smuggle a block the model reads as separate from the data around it
    r"(?:`{3,}|~{3,})[\w-]*",
]
_INSTRUCTIONS = re.compile("|".join(f"(?:{p})" for p in _INSTRUCTION_PATTERNS), re.IGNORECASE | re.MULTILINE)


def strip_control(text: str) -> str:
    """NFC-normalized text without control or invisible formatting characters (newlines and tabs kept)."""
    return _CONTROL.sub("", unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n")))


def neutralize_instructions(text: str) -> str:
    """Replace prompt-injection shapes with `[filtered]`."""
    return _INSTRUCTIONS.sub(FILTERED, text)


def truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip() + "…"


def sanitize_metadata(value: object, limit: int = MAX_TITLE) -> str:
    """A single-line, length-limited, neutralised metadata value (title, source, tag)."""
    text = _WHITESPACE.sub(" ", strip_control(str(value))).strip()
    return truncate(_WHITESPACE.sub(" ", neutralize_instructions(text)).strip(), limit)


def sanitize_tags(tags: list[str] | None) -> list[str]:
    """Sanitised, de-duplicated, non-empty tags, at most MAX_TAGS."""
    clean = (sanitize_metadata(tag, MAX_TAG) for tag in tags or ())
    return list(dict.fromkeys(tag for tag in clean if tag))[:MAX_TAGS]


def sanitize_for_prompt(text: str, limit: int | None = None) -> str:
    """Body text for a prompt: control characters stripped, instructions neutralised, lines kept."""
    clean = neutralize_instructions(strip_control(text))
    return truncate(clean, limit) if limit else clean
