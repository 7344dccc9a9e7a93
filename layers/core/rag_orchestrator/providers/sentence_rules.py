"""Which sentences of a passage may answer a question: the sentence picker's rules, one function each."""

from __future__ import annotations

import re
from functools import lru_cache

from rag_orchestrator.text.sentences import INLINE_CODE, PROMPT, Segment
from rag_orchestrator.text.words import content_words, normalize

ANSWERING_KINDS = frozenset({"prose", "command"})
MIN_LEAD_IN_WORDS = 8  # "Install it with pip:" introduces an answer; a long sentence ending in ":" may be one
MAX_EXAMPLE_CHARS = 120
MAX_CONTEXT_CHARS = 80

_PLAIN_WORD = re.compile(r"^[(\"'“‘*]*[^\W_](?:[^\W_]|['’.%+/-])*[)\"'”’*,.;:!?]*$")  # "HTTPX", "3.8+." too
_FIGURE = re.compile(r"^[(\"'“]*[€$£]?[\d:.,/–—-]*\d[\d:.,/–—-]*%?[)\"'”,.;:]*$|^[–—-]+$")
_URL = re.compile(r"\S*(?:https?://|www\.)\S*|\S+\.(?:svg|png|jpe?g|gif|html?|ya?ml)\S*")
_COMMAND = re.compile(
    r"^(pip3?|pipx|python3?|uv|uvx|poetry|conda|make|npm|npx|yarn|pnpm|git|docker|curl|wget|brew|apt(-get)?|"
    r"cargo|go|sam|aws|pytest|ruff|tox|nox|[\w.-]+ --?[\w-]+)\b"
)
# Something to do: an HTTP call (`POST /api/v1/…`), or inline code that is a command (`make test`).
_ACTION = re.compile(
    r"\b(GET|POST|PUT|PATCH|DELETE) /\S+|`(?:\$ )?(?:" + _COMMAND.pattern[2:-3] + r")\b[^`]*`"
)
_FILE_NAME = re.compile(r"\.(?:svg|png|jpe?g|gif|html?|ya?ml)")  # what `_URL`'s second alternative ends in
_LINK_TARGET = re.compile(r"!?\[([^\]]*)\]\([^)]*\)|`([^`<]*)<[^>]+>`_")
_SIGNATURE = re.compile(r"[\w.]+\(.*\):?")  # get(key[, default])
_ENDS_SENTENCE = re.compile(r"[.!?:;)\"'`*_”’>]\s*$")
_ANAPHORA = re.compile(
    r"^(this|that|these|those|it|its|they|their|such|thus|therefore|so|then|otherwise|however|here)\b",
    re.IGNORECASE,
)
_HOW_TO_QUESTION = re.compile(
    r"^\s*(how (do|can|should|would|could|may) (i|we|you|one)|how to)\b", re.IGNORECASE
)


def is_lead_in(segment: Segment) -> bool:
    """A short sentence ending with a colon introduces what follows ("Install it with pip:")."""
    return segment.text.rstrip("*_ ").endswith(":") and len(segment.text.split()) < MIN_LEAD_IN_WORDS


def quotes_question(text: str, question: str) -> bool:
    """The question itself in the text, as an example's payload quotes it."""
    asked_text = " ".join(normalize(question).rstrip("?!. ").split())
    return len(asked_text) > 12 and asked_text in " ".join(normalize(text).split())


def repeats_question(segment: Segment, question: str) -> bool:
    """The question itself (quoted in an example), or an FAQ's question much like it."""
    if quotes_question(segment.text, question):
        return True
    if not segment.text.rstrip("*_ ").endswith("?"):
        return (
            False  # a statement with the question's words may well answer it ("Yes, shipping costs extra.")
        )
    said = set(content_words(segment.text))
    return len(said & set(content_words(question))) * 2 >= len(said)


def reads_as_code(text: str) -> bool:
    """No more words than identifiers, calls and symbols (inline `code` counts as a word): code as prose.
    Figures are neither ("06:45 – 17:30", "€4.90")."""
    kinds = [_token_kind(t) for t in (INLINE_CODE.sub("code", text) if "`" in text else text).split()]
    counted = len(kinds) - kinds.count(_FIGURE_TOKEN)
    return counted > 1 and kinds.count(_WORD_TOKEN) * 2 <= counted


_FIGURE_TOKEN, _WORD_TOKEN, _OTHER_TOKEN = 0, 1, 2


@lru_cache(maxsize=16_384)
def _token_kind(token: str) -> int:
    """A figure, a plain word, or anything else: tokens come back sentence after sentence, and the two
    patterns cost ~1 µs a token."""
    if _FIGURE.match(token):
        return _FIGURE_TOKEN
    return _WORD_TOKEN if _PLAIN_WORD.match(token) else _OTHER_TOKEN


def is_mostly_links(text: str) -> bool:
    """Links, and little else once they are read as their text ("Sourdough loaf: €4.90" has no link)."""
    if not _may_link(text):  # neither pattern can match: the text is its own visible text
        return False
    visible = _URL.sub(" ", _LINK_TARGET.sub(r"\1", text))
    return visible != text and len(re.findall(r"[^\W\d_]{2,}", visible)) < 3


def _may_link(text: str) -> bool:
    """What each of `_LINK_TARGET`'s and `_URL`'s matches holds, looked for without them (`_URL` tries
    `\\S*` from every position: ~10 µs a sentence)."""
    return "](" in text or "`_" in text or "://" in text or "www." in text or bool(_FILE_NAME.search(text))


def is_cut_off(segment: Segment, passage_text: str, first: bool, last: bool) -> bool:
    """A sentence the chunking cut: the passage begins in its middle, or ends before its end."""
    if (
        first
        and segment.start == len(passage_text) - len(passage_text.lstrip())
        and segment.text[:1].islower()
    ):
        return True
    return last and not passage_text[segment.end :].strip() and not _ENDS_SENTENCE.search(segment.text)


def example_after(segment: Segment, following: Segment | None) -> str | None:
    """The one-line command a sentence ending with a colon introduces ("Install it with pip:"), in backticks."""
    if following is None or not segment.text.rstrip("*_ ").endswith(":"):
        return None
    if following.kind == "command":
        return following.text
    line = PROMPT.sub("", following.text).strip()
    if following.kind != "code" or not _COMMAND.match(line) or len(line) > MAX_EXAMPLE_CHARS or "`" in line:
        return None
    return f"`{line}`"


def context_of(parts: list[Segment], position: int) -> str | None:
    """What a sentence is read with: the lead-in of the list it is an item of ("By default it will:"), or
    the name its paragraph describes, a heading or signature in code right above it ("`unparse()`")."""
    segment = parts[position]
    if segment.item:
        earlier = next((p for p in reversed(parts[:position]) if not p.item), None)
        if earlier is None or earlier.kind != "prose" or not earlier.text.endswith(":"):
            return None
        return earlier.text if len(earlier.text) <= MAX_CONTEXT_CHARS else None
    if position == 0 or parts[position - 1].block == segment.block:
        return None  # not the first sentence of its paragraph
    above = parts[position - 1]
    if above.kind == "heading":
        name = above.text.lstrip("#=").strip()
        names_code = "`" in name  # "### `unparse()`", not "## Installation"
    else:
        name = above.text
        names_code = bool(_SIGNATURE.fullmatch(name)) and (above.kind == "code" or reads_as_code(name))
    return f"{name.rstrip(':')}:" if names_code and len(name) <= MAX_CONTEXT_CHARS else None


def heading_of(parts: list[Segment], position: int) -> str:
    """The text of the nearest heading above the segment in its passage ("" when there is none)."""
    above = next((p for p in reversed(parts[:position]) if p.kind == "heading"), None)
    return above.text.lstrip("#=").strip() if above else ""


def skip_reason(segment: Segment, question: str, example: str | None = None) -> str | None:
    """Why a sentence cannot answer the question by itself (with the command it introduces), or None."""
    if repeats_question(segment, question):
        return "repeats the question"
    return unquotable(segment, example)


def unquotable(segment: Segment, example: str | None = None) -> str | None:
    """Why a sentence answers no question by itself (with the command it introduces), or None."""
    if segment.kind not in ANSWERING_KINDS:
        return segment.kind
    if is_lead_in(segment) and example is None:
        return "lead-in"
    if is_mostly_links(segment.text):
        return "link"
    if segment.kind == "prose" and reads_as_code(segment.text):
        return "code"
    return None


def refers_back(segment: Segment) -> bool:
    """Opens with "This", "It", "Such"…: it needs the sentence before it to be understood."""
    return bool(_ANAPHORA.match(segment.text.lstrip("*_\"'“(")))


def action_in(text: str) -> str | None:
    """The action a text names: an HTTP call or a command in backticks; None when it names none."""
    found = _ACTION.search(text)
    return found.group(0) if found else None


def wants_steps(question: str) -> bool:
    """How do I…, how to…: the answer is something to do, and a command says it best."""
    return bool(_HOW_TO_QUESTION.search(question))
