"""Time-ordered identifiers: message ids sort by creation, so a Query is a window."""

from __future__ import annotations

import os
import threading
import time

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # Crockford base32, sortable as text
_lock = threading.Lock()
_last = (0, 0)


_PAIRS = [high + low for high in _ALPHABET for low in _ALPHABET]  # every 10-bit value as 2 characters
_SHIFTS = range(120, -1, -10)  # 26 characters = 13 pairs, most significant first


def _encode(value: int) -> str:
    """`value` (< 2**130) as 26 Crockford base32 characters, two at a time (half the steps of one)."""
    return "".join([_PAIRS[(value >> shift) & 1023] for shift in _SHIFTS])


def sortable_id() -> str:
    """A ULID: 48-bit milliseconds + 80 random bits, strictly increasing within this process."""
    global _last
    with _lock:
        millis = time.time_ns() // 1_000_000
        last_millis, last_random = _last
        if millis <= last_millis:
            millis, randomness = last_millis, last_random + 1
        else:
            randomness = int.from_bytes(os.urandom(10))
        _last = (millis, randomness)
    return _encode(millis << 80 | randomness & ((1 << 80) - 1))
