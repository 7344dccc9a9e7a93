"""built_once: a part asked for by many threads at once is built once, and one part may ask for another
while it is built."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from rag_orchestrator.built_once import built_once


class Parts:
    def __init__(self) -> None:
        self.builds = 0

    @built_once
    def store(self) -> object:
        self.builds += 1
        time.sleep(0.05)  # a slow build: an import, a client
        return object()

    @built_once
    def service(self) -> tuple[object, object]:
        return (self.store, object())  # built while another part is being built


def test_many_threads_asking_at_once_get_one_part_built_once():
    parts = Parts()
    start = threading.Barrier(8)

    def ask(_: int) -> object:
        start.wait()
        return parts.store

    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(ask, range(8)))
    assert parts.builds == 1 and all(part is got[0] for part in got)


def test_a_part_built_from_another_is_built_with_it():
    parts = Parts()
    assert parts.service[0] is parts.store and parts.builds == 1
    assert Parts.store.attrname == "store"  # the descriptor, read on the class
