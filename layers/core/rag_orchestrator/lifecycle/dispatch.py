"""Running a lifecycle job away from the request (docs/privacy.md): API Gateway gives a request 29 s.

In AWS a job is handed over through the conversations table: a `RUN#` item under the job's partition,
whose insert reaches LifecycleFunction on the table's stream (an event source filtered to those
inserts). The API function needs no name of the other function, and the stream retries a failed run,
which resumes where it stopped. Without Lambda (`make dev`, tests) a thread of this process runs the
same handler code.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from rag_orchestrator.conversations import items as it
from rag_orchestrator.conversations.keys import iso
from rag_orchestrator.conversations.table import Table
from rag_orchestrator.domain.base import utcnow
from rag_orchestrator.observability import logger

Job = Callable[[dict[str, Any]], object]  # run_lifecycle_event with its settings
RUN_PREFIX = "RUN#"  # SK of a hand-over item; the stream's filter matches its insert
KINDS = {"erasure": ("ERASURE#", "erasureId"), "export": ("EXPORT#", "exportId")}
RUN_ITEM_LIFE = timedelta(days=1)  # a hand-over is read once, on its insert


class StreamDispatcher:
    """Hands a job to LifecycleFunction by inserting a RUN# item the table's stream delivers."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def dispatch(self, event: dict[str, Any]) -> None:
        prefix, field = KINDS[event["kind"]]
        now = utcnow()
        item = {
            "PK": prefix + event[field],
            "SK": f"{RUN_PREFIX}{iso(now)}",
            "entity": "lifecycleRun",
            "expiresAt": it.epoch(now + RUN_ITEM_LIFE),
        }
        self._table.call("put_item", Item=it.to_attributes(item))  # StorageUnavailable: a 503


def events_of(stream_event: dict[str, Any]) -> list[dict[str, Any]]:
    """The lifecycle events a DynamoDB stream batch carries: one per inserted RUN# item."""
    events = []
    for record in stream_event.get("Records") or ():
        keys = (record.get("dynamodb") or {}).get("Keys") or {}
        pk, sk = (keys.get("PK") or {}).get("S", ""), (keys.get("SK") or {}).get("S", "")
        if record.get("eventName") != "INSERT" or not sk.startswith(RUN_PREFIX):
            continue
        for kind, (prefix, field) in KINDS.items():
            if pk.startswith(prefix) and len(pk) > len(prefix):
                events.append({"kind": kind, field: pk[len(prefix) :]})
                break
        else:  # a failed batch would hold the stream's shard for its retries: skipped, and said
            logger.warning("lifecycle hand-over of no known job skipped", extra={"partition": pk[:16]})
    return events


class ThreadDispatcher:
    """The job on a daemon thread of this process; `wait` joins what was started (tests, shutdown)."""

    def __init__(self, job: Job) -> None:
        self._job = job
        self._threads: list[threading.Thread] = []

    def dispatch(self, event: dict[str, Any]) -> None:
        thread = threading.Thread(target=self._run, args=(event,), name="lifecycle", daemon=True)
        self._threads.append(thread)
        thread.start()

    def wait(self, timeout: float = 60.0) -> None:
        for thread in list(self._threads):
            thread.join(timeout)
        self._threads = [t for t in self._threads if t.is_alive()]

    def _run(self, event: dict[str, Any]) -> None:
        try:
            self._job(event)
        except Exception:  # Lambda would retry; here the log says what went wrong, a new request re-runs it
            logger.exception("lifecycle job failed", extra={"kind": event.get("kind")})
