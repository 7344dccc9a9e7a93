"""What kind of fact a question asks for, and whether a text holds one: a price, a time of day, a date or
day, a duration, a number, a phone number, a person or a place.

"How much is a flat white?" wants a price, and "Oat milk is free of charge." or "€3.10" answers it while
"The café sits on the quay." does not, however many words it shares with the question. Kinds are read
from the question's own words (English), never from a list of questions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, Protocol

from rag_orchestrator.text.terms import terms

Kind = Literal["price", "time", "date", "duration", "number", "phone", "person", "place", "setting"]


def _either(*alternatives: str) -> re.Pattern[str]:
    return re.compile("|".join(alternatives), re.IGNORECASE)


_WHEN = r"^\W*(?:and |so |but |then )?when"  # a question opening with "when", not "… when Chroma is down"
_NUMBER_WORD = (
    r"(?:\d+(?:[.,]\d+)?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|"
    r"thirty|forty|fifty|sixty|ninety|a hundred|hundred|a|an|half an?|a few|several)"
)
_MONTHS = r"january|february|march|april|may|june|july|august|september|october|november|december"
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_DAY = r"(?:mon|tues?|wed(?:nes)?|thu(?:rs)?|fri|sat(?:ur)?|sun)(?:day)?s?\b"
_PLACE_NOUN = (
    r"basement|floor|courtyard|station|street|road|square|lane|avenue|room|building|corner|entrance|terrace|"
    r"quay|garage|lobby|reception|hall|bin|bank|shop|centre|center|garden|park"
)

# The kinds in the order they are tried: the more specific first ("how long" before "how").
_ASKS: list[tuple[Kind, re.Pattern[str]]] = [
    (
        "phone",
        _either(
            r"\b(phone|telephone)( number)?\b", r"\bnumber (should|do|can|to) (i|we|you) (call|ring|dial)\b"
        ),
    ),
    (
        "duration",
        _either(
            r"\bhow long\b",
            r"\bhow much time\b",
            r"\bhow (far|many \w+) (ahead|in advance|before(hand)?)\b",
            r"\bhow (soon|quickly)\b",
            r"\bhow many (seconds|minutes|hours|days|weeks|months|years)\b",
            r"\bhow late can\b",
        ),
    ),
    (
        "price",
        _either(
            r"\bhow much\b(?! time)",
            r"\b(price|prices|cost|costs|fee|fees|fine|deposit|tariff)\b",
            r"\bwhat (do|does|did|will|would|should) (i|we|you|they|one|an? \w+) pay\b",
        ),
    ),
    (
        "time",
        _either(
            r"\bwhat time\b",
            r"\b(until|till|by) (what time|when)\b",
            r"\bopening (hours|times)\b",
            r"\bhours\b",
            rf"{_WHEN} (does|do|is|are|will)\b.*\b(open|opens|close|closes|shut|start|starts|begin|begins|end|"
            r"ends|finish|leave|served?)\b",
            r"\bat what times?\b",
        ),
    ),
    (
        "date",
        _either(
            r"\b(what|which) (day|days|date|dates|month|months|year|weekday)\b",
            r"\bon (what|which) (day|date)\b",
            r"\bin (what|which) (month|months|year)\b",
            rf"{_WHEN} (is|are|was|were|can)\b",
            rf"{_WHEN} (does|do|will)\b.*\b(start|starts|begin|begins|end|ends|take place)\b",
            r"\buntil (what|which) date\b",
        ),
    ),
    (
        "number",
        _either(
            r"\bhow many\b",
            r"\bhow (far|big|large|tall|high|wide|deep|heavy|old|often)\b",
            r"\bwhat (percentage|size)\b",
            r"\bwhich (bus|buses|line|lines|platform|port|number)\b",
        ),
    ),
    (
        "person",
        _either(
            r"^\W*(and )?(who|whom|whose)\b",
            r"\b(to|for|with) whom\b",
            r"\b(which|what) (dentist|doctor|teacher|person|staff|manager|owner|librarian|curator|member|coach|"
            r"instructor|contact)\b",
        ),
    ),
    (
        "place",
        _either(
            r"^\W*(and )?where\b",
            r"\bwhere (is|are|can|do|does|should)\b",
            r"\baddress\b",
            r"\b(which|what) (room|floor|building|street|bin|town|city|place|location|entrance|stop)\b",
            r"\bin which (room|floor|building|bin)\b",
        ),
    ),
]
_ASKS.append(
    (
        "setting",
        _either(
            r"\b(which|what) (environment )?(variable|variables|setting|settings|env var|option|parameter|flag)\b"
        ),
    )
)
# A question that opens with a verb asks yes or no ("Can I pay by card?"): no kind of fact is required.
_YES_NO = re.compile(
    r"^\W*(and )?(can|could|is|are|was|were|does|do|did|will|would|may|should|has|have|am)\b", re.I
)
_HOLDS: dict[Kind, re.Pattern[str]] = {
    "price": _either(
        r"[€$£¥]\s?\d",
        r"\d(?:[.,]\d+)?\s?(?:€|eur\b|euros?\b|usd\b|dollars?\b|pounds?\b|cents?\b|p\b)",
        r"\bfree\b",
        r"\bno charge\b",
        r"\bincluded\b",
        r"\bnothing\b",
    ),
    "time": _either(
        # "€5.50" and "3.20 euros" are prices, not times
        r"(?<![€$£¥])(?<![€$£¥] )\b\d{1,2}[:.]\d{2}\b(?!\s?(?:€|eur\b|euros?\b|usd\b|dollars?\b|pounds?\b))",
        r"\b\d{1,2}\s?(am|pm|a\.m\.|p\.m\.)",
        r"\bnoon\b",
        r"\bmidnight\b",
        r"\bclosed\b",
        r"\baround the clock\b",
        r"\b24 hours\b",
        r"\bhalf past\b",
        r"\bo'clock\b",
    ),
    "date": _either(
        rf"\b{_DAY}",
        rf"\b\d{{1,2}}(st|nd|rd|th)?\s+{_MONTH}",
        rf"\b{_MONTH}\s+\d{{1,2}}\b",
        rf"\b({_MONTHS})\b",
        r"\b\d{4}-\d{2}-\d{2}\b",
        r"\b(every|each) (day|week|month|year)\b",
        r"\b(19|20)\d{2}\b",
        r"\b(weekends?|weekdays?|today|tomorrow)\b",
    ),
    "duration": _either(
        rf"\b{_NUMBER_WORD}[\s-]*(seconds?|minutes?|mins?|hours?|hrs?|days?|weeks?|fortnights?|months?|years?)\b",
        r"\bovernight\b",
        r"\bsame day\b",
    ),
    "number": _either(
        r"\d",
        r"\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|"
        r"fifty|hundred|thousand|once|twice|dozen)\b",
    ),
    "phone": re.compile(r"\+?\d[\d ()/-]{6,}\d"),
    "setting": re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|(?<![\w-])--[a-z][\w-]+"),
    "place": _either(
        r"https?://",
        r"\b(on|at|via) (the )?(?-i:[A-Z])[\w.-]+",
        r"\b\d+[a-z]?\s+(?-i:[A-Z])[a-z]+\s+(street|st|road|rd|lane|avenue|ave|square|way|place|drive|quay|park)\b",
        r"\b(next to|behind|opposite|beside|near|above|below|inside|outside|upstairs|downstairs|in front of|"
        r"across from|on the (ground|first|second|third|top) floor)\b",
        rf"\b(in|on|at|into|from) (the )?({_PLACE_NOUN})\b",
        r"\b(grey|blue|yellow|brown|green|black|red) bin\b",
    ),
}
# Two capitalised words (or a title and one) that are not a place's name: "Marta Okafor", "Dr. Osei".
_CAPITALISED = r"[A-Z](?:[^\W\d_]|['’-])+"
_NAME = re.compile(rf"\b(?:(?:Dr|Mr|Mrs|Ms|Prof)\.?\s+{_CAPITALISED}|{_CAPITALISED}(?:\s+{_CAPITALISED})+)")
_PLACE_WORDS_TEXT = """street st road rd lane avenue ave square way place drive quay park café cafe pool centre center hotel
    museum library station bakery school practice society room hall market bank church office garden shop
    house bin bins lines line swimming leisure dental primary city town term half"""
_PLACE_WORDS = frozenset(_PLACE_WORDS_TEXT.split())
_MANY = re.compile(r"\bhow many ([a-z]+)", re.I)
_HOW_FAR = re.compile(r"\bhow far\b(?! (ahead|in advance|before))", re.I)
_DISTANCE = frozenset(terms("km kilometres miles metres"))
_ANY_COUNT = frozenset(
    {"thing", "things", "item", "items", "time", "times", "one", "ones", "kind", "kinds", "people"}
)
# Words that only name the kind of fact asked ("the price of", "what time"): a sentence holding a fact of
# that kind says them, whether it uses them or not ("Croissant: €1.70").
KIND_WORDS: dict[Kind, frozenset[str]] = {
    "price": frozenset(terms("price pay")),
    "time": frozenset(terms("time hours open close start end")),
    "date": frozenset(terms("day date month year")),
    "duration": frozenset(terms("time long")),
    "number": frozenset(terms("number far")),
    "phone": frozenset(terms("phone number")),
    "person": frozenset(terms("person name")),
    "place": frozenset(terms("address location place")),
    "setting": frozenset(terms("variable setting option parameter environment")),
}
# The kinds a pattern recognises well enough that no sentence holding one means the fact is not there.
CHECKABLE: frozenset[Kind] = frozenset({"price", "time", "date", "duration", "number", "phone"})


def asks_yes_or_no(question: str) -> bool:
    """It opens with a verb: "Can I pay by card?", "Does the museum have a shop?"."""
    return bool(_YES_NO.search(question))


def asked_kinds(question: str) -> tuple[Kind, ...]:
    """The kinds of fact the question asks for, most specific first; () when it asks for none of them."""
    if asks_yes_or_no(question):
        return ()
    return tuple(kind for kind, pattern in _ASKS if pattern.search(question))


def holds(kind: Kind, text: str) -> bool:
    """Whether the text states a fact of this kind."""
    if kind == "person":
        return any(not set(name.lower().split()) & _PLACE_WORDS for name in _NAME.findall(text))
    return bool(_HOLDS[kind].search(text))


def counted(question: str) -> frozenset[str]:
    """The units a number that answers must come with: what "how many" counts ("how many calories" ->
    the term of calories), a distance for "how far"; none for any other question."""
    if _HOW_FAR.search(question):
        return _DISTANCE
    found = _MANY.search(question)
    if not found or found.group(1).lower() in _ANY_COUNT:
        return frozenset()
    return frozenset(terms(found.group(1), implied=False)[:1])


class Stated(Protocol):
    """A text as the answer rule reads it (the reranker's candidates keep what it reads, `sentence_picker`)."""

    def holds(self, kind: Kind) -> bool: ...  # whether it states a fact of this kind (`holds`)

    @property
    def text_terms(self) -> frozenset[str]: ...  # the terms of its text


def kind_stated(kinds: tuple[Kind, ...], unit: frozenset[str], stated: Stated) -> Kind | None:
    """The kind of fact asked for (one of the first two `kinds`) that `stated` holds, else None.

    A count must name what it counts (`unit`, from `counted`): "how many calories" wants "910 kcal"."""
    held = next((kind for kind in kinds[:2] if stated.holds(kind)), None)
    if held == "number" and unit and not unit & stated.text_terms:
        return None
    return held


@dataclass(frozen=True, slots=True)
class _Text:
    text: str

    def holds(self, kind: Kind) -> bool:
        return holds(kind, self.text)

    @property
    def text_terms(self) -> frozenset[str]:
        return frozenset(terms(self.text))


def answered_kind(question: str, text: str, kinds: tuple[Kind, ...] | None = None) -> Kind | None:
    """`kind_stated` for a question and a text: the kind asked for that the text holds, else None."""
    kinds = asked_kinds(question) if kinds is None else kinds
    return kind_stated(kinds, counted(question), _Text(text))
