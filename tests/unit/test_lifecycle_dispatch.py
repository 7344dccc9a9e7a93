"""Reading LifecycleFunction's stream batches: one job per inserted RUN# item, nothing else."""

from __future__ import annotations

from rag_orchestrator.lifecycle.dispatch import events_of


def record(event_name: str, pk: str, sk: str) -> dict:
    return {"eventName": event_name, "dynamodb": {"Keys": {"PK": {"S": pk}, "SK": {"S": sk}}}}


def test_each_inserted_run_item_is_its_jobs_event():
    batch = {
        "Records": [
            record("INSERT", "ERASURE#e1", "RUN#2026-11-26T18:00:00Z"),
            record("INSERT", "EXPORT#x1", "RUN#2026-11-26T18:00:01Z"),
        ]
    }
    assert events_of(batch) == [{"kind": "erasure", "erasureId": "e1"}, {"kind": "export", "exportId": "x1"}]


def test_other_records_are_no_jobs():
    batch = {
        "Records": [
            record("MODIFY", "ERASURE#e1", "RUN#2026-11-26T18:00:00Z"),  # only an insert hands a job over
            record("REMOVE", "ERASURE#e1", "RUN#2026-11-26T18:00:00Z"),  # its TTL expiring
            record("INSERT", "ERASURE#e1", "META"),  # the job itself
            record("INSERT", "CONV#c1", "RUN#2026-11-26T18:00:00Z"),  # no job kind: skipped, not failed
            record("INSERT", "ERASURE#", "RUN#2026-11-26T18:00:00Z"),  # no id
        ]
    }
    assert events_of(batch) == []
    assert events_of({}) == []
