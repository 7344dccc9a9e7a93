"""Time-ordered identifiers: message ids sort by creation, so a Query is a window."""

from __future__ import annotations

import os
import threading
import time

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # Crockford base32, sortable as text
_lock = threading.Lock()
_last = (0, 0)


def _encode(value: int, length: int) -> str:
    chars = []
    for _ in range(length):
        value, rest = divmod(value, 32)
        chars.append(_ALPHABET[rest])
    return "".join(reversed(chars))


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
    return _encode(millis, 10) + _encode(randomness & ((1 << 80) - 1), 16)
