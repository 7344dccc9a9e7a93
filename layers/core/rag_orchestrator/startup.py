"""A function's start-up without cyclic-GC passes, and what it built kept out of later ones.

Loading FastAPI, pydantic and the app creates ~110,000 objects the collector tracks (classes,
schemas, closures): with it on, a start-up paid ~145 young, a dozen middle and one full collection over
them, a quarter of each function's import time (bench/README.md, "Performance, round two"). None of
it is garbage worth the passes: `gc.freeze()` then moves it all to the permanent generation, which no
later collection scans, and the collector runs as before for what requests allocate. The few hundred
cyclic objects a start-up leaves are frozen with the rest (collecting them first cost ~60 ms).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def frozen_start() -> Iterator[None]:
    """Cyclic GC off while the block loads and builds the app; then what exists is frozen."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()
