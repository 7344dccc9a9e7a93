"""Message ids: ULIDs (26 Crockford base32 characters), strictly increasing within a process."""

from __future__ import annotations

import itertools
import time

from rag_orchestrator.domain.ids import _ALPHABET, sortable_id


def _decode(text: str) -> int:
    value = 0
    for char in text:
        value = value * 32 + _ALPHABET.index(char)
    return value


def test_ids_are_ulids_of_the_current_millisecond():
    before = time.time_ns() // 1_000_000
    ident = sortable_id()
    after = time.time_ns() // 1_000_000
    assert len(ident) == 26 and set(ident) <= set(_ALPHABET)
    assert ident[0] in "01234567"  # 128 bits in 130: the top two bits are zero
    assert before <= _decode(ident[:10]) <= after
    assert _decode(ident) >> 80 == _decode(ident[:10])


def test_ids_strictly_increase_as_text_and_as_numbers():
    ids = [sortable_id() for _ in range(5000)]  # many within one millisecond: randomness + 1 each
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    numbers = [_decode(i) for i in ids]
    assert all(b > a for a, b in itertools.pairwise(numbers))


def test_each_id_carries_its_own_millisecond_across_several():
    seen = set()
    while len(seen) < 5:  # ids of one millisecond share its characters: none may keep an earlier one's
        before = time.time_ns() // 1_000_000
        ident = sortable_id()
        after = time.time_ns() // 1_000_000
        millis = _decode(ident[:10])
        assert before <= millis <= after and _decode(ident) >> 80 == millis
        seen.add(millis)
