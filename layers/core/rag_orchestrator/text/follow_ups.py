"""A follow-up question read with the question before it, without a model.

"And on Saturdays?" after "When does the Riverside Pool open on weekdays?" is searched and answered as
"And on Saturdays? Riverside Pool open": the earlier question's content words join the message, except
those the message replaces with a word of the same kind (another day, another colour). A message that
stands on its own (two words of its own and nothing pointing back) is left as it is.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag_orchestrator.text.terms import slots, terms
from rag_orchestrator.text.words import content_words, is_function_word

MIN_OWN_WORDS = 2
_WORD = re.compile(r"[^\W_]+(?:[-'’.][^\W_]+)*")
_POINTS_BACK = re.compile(
    r"^\s*(and|or|but|also|so|then|what about|how about)\b"
    r"|\b(it|its|they|them|their|there|that|this|these|those|one|ones|same|too|also|else|instead)\b",
    re.IGNORECASE,
)


def points_back(message: str) -> bool:
    """Whether the message needs the one before it: it opens with "And…", points back ("there", "it",
    "that one"), or has fewer than two words of its own."""
    return bool(_POINTS_BACK.search(message)) or len(content_words(message)) < MIN_OWN_WORDS


def carried_words(message: str, previous: str) -> list[str]:
    """The earlier question's content words, as written, that the message neither has nor replaces with
    a word of the same kind (`terms.SLOTS`: days, colours, months…)."""
    own = set(content_words(message))
    replaced = set(slots(terms(message, implied=False)))
    words = _WORD.findall(previous)
    carried = []
    for word, following in zip(words, [*words[1:], ""], strict=True):
        if is_function_word(word) or set(content_words(word)) <= own or set(slots(terms(word))) & replaced:
            continue
        if following and set(content_words(following)) <= own and not is_function_word(following):
            continue  # it qualified a word the message names anew: "city" of "city bike" before "an e-bike"
        carried.append(word)
    return list(dict.fromkeys(carried))


def standalone(message: str, previous: str | None) -> str:
    """The message as a question of its own: with the earlier question's words when it points back."""
    if not previous or not points_back(message):
        return message
    carried = carried_words(message, previous)
    return f"{message.strip()} {' '.join(carried)}" if carried else message


def previous_question(earlier: Sequence[str]) -> str | None:
    """The last of the earlier questions as a question of its own (each read with the one before it)."""
    previous: str | None = None
    for question in earlier:
        previous = standalone(question, previous)
    return previous
