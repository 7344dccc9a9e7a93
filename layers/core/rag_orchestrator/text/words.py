"""Content words: lower-cased, accents folded, function words dropped, light suffixes stripped."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

_WORD = re.compile(r"[^\W_]+")
_COMBINING = re.compile(
    r"[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]"
)  # accents, decomposed
_FUNCTION_WORDS = """
    a about above after again all also am an and any are as at be been before being below between both but
    by can could did do does doing done during each either else few for from further get gets got had
    has have having he her here hers him his how i if in into is it its itself just let lets like may me
    many might more most much must my need no nor not now of off on once only onto or other our ours out over own
    please same shall she should so some such tell than that the their theirs them then there these they
    this those through thus to too under until up upon us use used uses using very via want was we were
    what when where which while who whom whose why will with within without would yes you your yours
"""
_STOP_WORDS = frozenset(_FUNCTION_WORDS.split())


def normalize(text: str) -> str:
    """Lower case, accents folded (NFKD without combining marks)."""
    if text.isascii():
        return text.lower()
    return _COMBINING.sub("", unicodedata.normalize("NFKD", text.lower()))


@lru_cache(maxsize=65_536)  # a pure function of one word, asked for the same words over and over
def stem(word: str) -> str:
    """A crude stem: "tests", "testing" and "tested" meet "test", "raise" meets "raised"; at most 7 letters."""
    for suffix, keep in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("es", "e"), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith(("ss", "us", "is")):
            word = word[: len(word) - len(suffix)] + keep
            if suffix in ("ing", "ed") and len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
                word = word[:-1]  # running -> run
            break
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]  # raise ~ raised, cache ~ cached
    return word[:7]


def is_function_word(word: str) -> bool:
    """A word that carries no topic ("the", "when", "does"), or a single letter that is not a digit."""
    plain = normalize(word)
    return plain in _STOP_WORDS or (len(plain) < 2 and not plain.isdigit())


def content_words(text: str) -> list[str]:
    """The stems of the words that carry meaning, in order (numbers kept, one-letter words dropped)."""
    return stems_of(normalize(text))


def stems_of(plain: str) -> list[str]:
    """`content_words` of a text already normalized."""
    return [
        stem(word)
        for word in _WORD.findall(plain)
        if word not in _STOP_WORDS and (len(word) > 1 or word.isdigit())
    ]
