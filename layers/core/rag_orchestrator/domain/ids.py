"""Time-ordered identifiers: message ids sort by creation, so a Query is a window."""

from __future__ import annotations

import os
import threading
import time

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # Crockford base32, sortable as text
_lock = threading.Lock()
_last = (0, 0, "")  # the last id's milliseconds, randomness, and its milliseconds' 10 characters


_PAIRS = [high + low for high in _ALPHABET for low in _ALPHABET]  # every 10-bit value as 2 characters
_MILLIS_SHIFTS = range(40, -1, -10)  # 48 bits in 10 characters (5 pairs), most significant first
_RANDOM_SHIFTS = range(70, -1, -10)  # 80 bits in 16 characters (8 pairs)
_RANDOM_BITS = (1 << 80) - 1


def _encode(value: int, shifts: range) -> str:
    """`value` as Crockford base32 characters, two at a time (half the steps of one)."""
    return "".join([_PAIRS[(value >> shift) & 1023] for shift in shifts])


def sortable_id() -> str:
    """A ULID: 48-bit milliseconds + 80 random bits, strictly increasing within this process.

    The ids of one millisecond share its 10 characters, encoded once (a turn makes several)."""
    global _last
    with _lock:
        millis = time.time_ns() // 1_000_000
        last_millis, last_random, head = _last
        if millis <= last_millis:
            millis, randomness = last_millis, last_random + 1
        else:
            randomness, head = int.from_bytes(os.urandom(10)), _encode(millis, _MILLIS_SHIFTS)
        _last = (millis, randomness, head)
    return head + _encode(randomness & _RANDOM_BITS, _RANDOM_SHIFTS)
