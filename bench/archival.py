"""Archival throughput: 1,000 idle conversations (3 messages each) on moto in-process, and the requests
each costs. Moved here from the archival tests, which keep their behaviour checks only."""

from __future__ import annotations

import time
from collections import Counter

from bench.report import Section

COUNT = 1000


def run(quick: bool = False) -> Section:
    from rag_orchestrator.conversations.archival import ArchivalJob
    from rag_orchestrator.conversations.table import Table
    from rag_orchestrator.domain.base import utcnow
    from tests.fakes.moto_aws import mocked_aws
    from tests.unit.test_archival import BUCKET, DAY, TABLE, seed

    section = Section("archival", packages=["moto", "boto3"])
    count = 200 if quick else COUNT
    with mocked_aws(TABLE, BUCKET, versioned=True) as (dynamodb, s3):
        seed((dynamodb, s3), count, per_conversation=3)
        requests: Counter[str] = Counter()
        for client in (dynamodb, s3):
            name = client.meta.service_model.service_name
            client.meta.events.register("before-send", lambda _name=name, **_: requests.update([_name]))
        job = ArchivalJob(
            Table(dynamodb, TABLE),
            s3,
            BUCKET,
            archive_after=30 * DAY,
            retention=30 * DAY,
            forget=lambda conversation_id: None,  # nothing is purged here: archival only
        )
        started = time.perf_counter()
        report = job.run(lambda: 10**9, utcnow())
        elapsed = time.perf_counter() - started
    if report.archived != count or report.failures:
        raise RuntimeError(f"archival incomplete: {report.as_dict()}")
    section.add(
        f"{count} conversations archived (moto in-process, 8 workers)", "conversations/s", count / elapsed
    )
    for service, n in sorted(requests.items()):
        section.add(f"{service} requests per archived conversation", "requests", n / count)
    return section
