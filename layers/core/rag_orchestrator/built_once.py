"""`built_once`: a cached property built by one thread only.

`functools.cached_property` takes no lock (since Python 3.12): two threads asking for a part not yet
built each build one, and one of the two is lost. FastAPI runs a route's plain (non-async)
dependencies in its thread pool, so the first requests of a cold app, arriving together, did just
that — with in-process storage, two stores, each with half the day's counts.
"""

from __future__ import annotations

import threading
from functools import cached_property
from typing import Any, Self, overload

_LOCKS_GUARD = threading.Lock()


class built_once[T](cached_property[T]):
    @overload
    def __get__(self, instance: None, owner: type | None = None) -> Self: ...

    @overload
    def __get__(self, instance: object, owner: type | None = None) -> T: ...

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        cache = instance.__dict__
        name = self.attrname
        if name is not None and name in cache:
            return cache[name]
        with _lock_of(instance):  # re-entrant: building one part may ask for another
            if name is not None and name in cache:
                return cache[name]
            return super().__get__(instance, owner)


def _lock_of(instance: Any) -> threading.RLock:
    cache = instance.__dict__
    lock = cache.get("_built_once_lock")
    if lock is None:
        with _LOCKS_GUARD:
            lock = cache.setdefault("_built_once_lock", threading.RLock())
    return lock
