"""Terms: a text's content words as stems, each word standing for its synonyms (`synonyms.py`), and what
a text says about days without naming them.

A text's terms also hold the days it covers: "weekdays" holds Monday to Friday, "Tuesday to Saturday" the
days between, "at weekends" Saturday and Sunday, and a day names the week part it is in. A question's
terms hold only what it names (`implied=False`): a question about Wednesday meets "weekdays", but a
question about the weekend does not meet every weekday.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from rag_orchestrator.text.synonyms import canonical, variants
from rag_orchestrator.text.words import normalize, stem, stems_of

DAYS = tuple(stem(d) for d in ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"))
WEEKDAY, WEEKEND = stem("weekday"), stem("weekend")
_WORKDAYS, _WEEKEND_DAYS = frozenset(DAYS[:5]), frozenset(DAYS[5:])
_DAY_NAMES = r"(mon|tues|wednes|thurs|fri|satur|sun)(?:day)?s?\.?"
_DAY_RANGE = re.compile(rf"\b{_DAY_NAMES}\s*(?:to|-|–|—|until|till|through|thru)\s*{_DAY_NAMES}\b")
# Hyphenated words are a term whole too ("e-bike", "Wi-Fi"), which tells an e-bike from a city bike.
_COMPOUND = re.compile(r"\b[^\W_]+(?:-[^\W_]+)+\b")
_PREFIXES = ("mon", "tues", "wednes", "thurs", "fri", "satur", "sun")
# Letters a search pattern accepts for each plain one: the stored text keeps its accents ("Café").
_FOLDED = {
    "a": "aàáâãäå",
    "c": "cç",
    "e": "eèéêë",
    "i": "iìíîï",
    "n": "nñ",
    "o": "oòóôõöø",
    "u": "uùúûü",
    "y": "yýÿ",
}


# Kinds of words a question picks one of ("on Saturdays", "the brown bin"): a text naming others of the
# kind and not the one asked is about something else, and a follow-up naming one replaces the earlier one.
_SLOTS_TEXT = """
monday tuesday wednesday thursday friday saturday sunday weekday weekend today tomorrow tonight
morning afternoon evening night
red orange yellow green blue purple pink brown grey gray black white
january february march april may june july august september october november december
breakfast lunch dinner
spring summer autumn winter
"""
SLOTS = [frozenset(stem(word) for word in line.split()) for line in _SLOTS_TEXT.strip().splitlines()]
# Each slot term's slots: `slots` runs for every sentence a reranking or an answer scores, so it looks a
# term up once instead of testing it against every slot.
_SLOTS_OF: dict[str, tuple[int, ...]] = {
    term: tuple(i for i, slot in enumerate(SLOTS) if term in slot) for term in frozenset().union(*SLOTS)
}


def slots(found: Iterable[str]) -> dict[int, set[str]]:
    """The terms of each slot among these terms."""
    named: dict[int, set[str]] = {}
    for term in found:
        for i in _SLOTS_OF.get(term, ()):
            named.setdefault(i, set()).add(term)
    return named


def _days_between(first: str, last: str) -> list[str]:
    start, end = _PREFIXES.index(first), _PREFIXES.index(last)
    span = range(start, end + 1) if start <= end else [*range(start, 7), *range(end + 1)]
    return [DAYS[i] for i in span]


def implied_days(text: str) -> list[str]:
    """The days and week parts a text covers without naming each: ranges, weekdays, weekends."""
    plain = normalize(text)
    return _implied(plain, stems_of(plain))


def _implied(plain: str, stems: list[str]) -> list[str]:
    words = set(stems)
    days: list[str] = []
    for match in _DAY_RANGE.finditer(plain):
        days += _days_between(match.group(1), match.group(2))
    if WEEKDAY in words:
        days += DAYS[:5]
    if WEEKEND in words:
        days += DAYS[5:]
    named = words | set(days)
    days += [WEEKDAY] if named & _WORKDAYS else []
    days += [WEEKEND] if named & _WEEKEND_DAYS else []
    return days


def terms(text: str, *, implied: bool = True) -> list[str]:
    """The text's terms in order (synonyms as one term), then its compounds; with `implied`, the days it
    covers after them."""
    plain = normalize(text)
    stems = stems_of(plain)
    found = [canonical(word) for word in stems]
    if "-" in plain:
        found += [stem(match.group(0).replace("-", "")) for match in _COMPOUND.finditer(plain)]
    return found + _implied(plain, stems) if implied else found


def search_pattern(term: str) -> str:
    """A case-insensitive regular expression for words starting with any stem of the term's group."""
    alternatives = sorted(variants(term), key=len, reverse=True)
    if term in DAYS[:5]:
        alternatives.append(WEEKDAY)
    elif term in DAYS[5:]:
        alternatives.append(WEEKEND)
    folded = [
        "".join(f"[{_FOLDED[ch]}]" if ch in _FOLDED else re.escape(ch) for ch in word)
        for word in alternatives
    ]
    return r"(?i)\b(?:" + "|".join(folded) + ")"
