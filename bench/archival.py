"""Archival throughput: idle conversations (3 messages each) on moto in-process, and the requests each
costs. Moved here from the archival tests, which keep their behaviour checks only.

1. 1,000 conversations with the job's default pool (WORKERS), no network time: moto's own work.
2. How the pool scales: the same job with 1, WORKERS and 4 x WORKERS threads, each request held
   DELAY_MS in its thread before it is sent (a botocore hook; time.sleep releases the GIL as a socket
   wait does), as network time to DynamoDB and S3 would. The job lists the 16 ByArchive shards one
   after the other in its own thread, a page of candidates at a time, and hands every conversation to
   the pool as it is listed: conversations of all shards run in parallel, the listing is one Query
   a page (up to 1 MB of keys).
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from bench.report import Section

COUNT = 1000
DELAY_MS = 10


def _archive(count: int, workers: int, delay_ms: float) -> tuple[float, Counter[str]]:
    """Seconds to archive `count` seeded conversations, and the requests sent per service."""
    from rag_orchestrator.conversations.archival import ArchivalJob
    from rag_orchestrator.conversations.table import Table
    from rag_orchestrator.domain.base import utcnow
    from tests.fakes.moto_aws import mocked_aws
    from tests.unit.test_archival import BUCKET, DAY, TABLE, seed

    with mocked_aws(TABLE, BUCKET, versioned=True) as (dynamodb, s3):
        seed((dynamodb, s3), count, per_conversation=3)
        requests: Counter[str] = Counter()

        def sent(service: str, **_: Any) -> None:
            requests.update([service])
            time.sleep(delay_ms / 1000)

        for client in (dynamodb, s3):
            name = client.meta.service_model.service_name
            client.meta.events.register("before-send", lambda _name=name, **kw: sent(_name, **kw))
        job = ArchivalJob(
            Table(dynamodb, TABLE),
            s3,
            BUCKET,
            archive_after=30 * DAY,
            retention=30 * DAY,
            forget=lambda conversation_id: None,  # nothing is purged here: archival only
            workers=workers,
        )
        started = time.perf_counter()
        report = job.run(lambda: 10**9, utcnow())
        elapsed = time.perf_counter() - started
    if report.archived != count or report.failures:
        raise RuntimeError(f"archival incomplete: {report.as_dict()}")
    return elapsed, requests


def run(quick: bool = False) -> Section:
    from rag_orchestrator.conversations.archival import WORKERS

    section = Section("archival", packages=["moto", "boto3"])
    count = 200 if quick else COUNT
    elapsed, requests = _archive(count, WORKERS, 0)
    section.add(
        f"{count} conversations archived (moto in-process, {WORKERS} workers)",
        "conversations/s",
        count / elapsed,
    )
    for service, n in sorted(requests.items()):
        section.add(f"{service} requests per archived conversation", "requests", n / count)
    scaled = 100 if quick else 300
    for workers in (1, WORKERS, 4 * WORKERS):
        elapsed, _ = _archive(scaled, workers, DELAY_MS)
        section.add(
            f"{scaled} conversations, {DELAY_MS} ms added per request, {workers} workers",
            "conversations/s",
            scaled / elapsed,
        )
    return section
