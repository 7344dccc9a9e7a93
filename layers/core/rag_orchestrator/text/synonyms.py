"""A small offline table of words that stand for one another in everyday questions and documents.

Each line is one group: a question with any word of a group meets a text with any other ("calories" meets
"kcal", "shut" meets "close"). Groups are kinds of words people swap when they ask (units and their names,
money words, opening and closing, British and American spellings, irregular plurals), not topics, so a
group never joins two words that could answer differently: weekdays are handled apart (`terms.py`).
"""

from __future__ import annotations

from rag_orchestrator.text.words import stem

_GROUPS = """
calorie calories kcal kilocalorie kilocalories energy
price prices cost costs fee fees fine fines pay paid tariff
cheap cheapest inexpensive
expensive dearest
open opens opening opened
close closes closed closing shut shuts
start starts begin begins beginning commence
end ends finish finishes
child children kid kids
person people
adult adults
man men
woman women
tooth teeth
foot feet
gym fitness workout
car cars parking park parked
book booking booked reserve reserved reservation
phone telephone call ring dial
lesson lessons class classes course courses
ticket tickets admission entry
address located location
minute minutes min mins
hour hours hr hrs hourly
day days daily
week weeks weekly
month months monthly
year years yearly annual annually
kilometre kilometres kilometer kilometers km
metre metres meter meters
litre litres liter liters
centre center
colour color
programme program
cancel cancelled canceled cancellation
charge charges charging charged recharge recharges recharging recharged
leave leaves leaving vacate vacated depart departs departure
late overdue
furniture sofa sofas couch settee armchair wardrobe
leftovers scraps peelings
rubbish garbage trash
bike bikes bicycle bicycles cycle
rent rental hire hired
room rooms bedroom
toilet toilets restroom loo
doctor doctors physician
manager managers director head
allowed permitted may
buy purchase
shop store
free gratis
"""


def _groups() -> dict[str, str]:
    canonical: dict[str, str] = {}
    for line in _GROUPS.strip().splitlines():
        stems = [stem(word) for word in line.replace("-", " ").split()]
        for s in stems:
            canonical.setdefault(s, stems[0])
    return canonical


CANONICAL = _groups()
VARIANTS: dict[str, frozenset[str]] = {}
for _stem, _head in CANONICAL.items():
    VARIANTS[_head] = VARIANTS.get(_head, frozenset()) | {_stem}


def canonical(word_stem: str) -> str:
    """The group's first word (as a stem) for a stem in the table, else the stem itself."""
    return CANONICAL.get(word_stem, word_stem)


def variants(term: str) -> frozenset[str]:
    """Every stem of the term's group (the term alone when it has none)."""
    return VARIANTS.get(term, frozenset({term}))
