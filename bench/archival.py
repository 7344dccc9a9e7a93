"""Archival throughput: idle conversations (3 messages each) on moto in-process, and the requests each
costs. Moved here from the archival tests, which keep their behaviour checks only.

1. 1,000 conversations with the job's default pool (WORKERS), no network time: moto's own work.
2. How the pool scales: the same job with 1, WORKERS and 4 x WORKERS threads, on moto in-process (its
   work shares this process's GIL with the job's) and on the bench stack's moto server, each request held
   DELAY_MS in its thread before it is sent (a botocore hook; time.sleep releases the GIL as a socket
   wait does), as network time to DynamoDB and S3 would. The job lists the 16 ByArchive shards one
   after the other in its own thread, a page of candidates at a time, and hands every conversation to
   the pool as it is listed: conversations of all shards run in parallel, the listing is one Query
   a page (up to 1 MB of keys).
"""

from __future__ import annotations

import os
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from bench.report import Section

COUNT = 1000
DELAY_MS = 10


@contextmanager
def _in_process() -> Iterator[tuple[Any, Any, str, str]]:
    from tests.fakes.moto_aws import mocked_aws
    from tests.unit.test_archival import BUCKET, TABLE

    # The bench stack, once started, points boto3 at its moto server through AWS_ENDPOINT_URL,
    # which moto's in-process mock would pass through.
    endpoint = os.environ.pop("AWS_ENDPOINT_URL", None)
    try:
        with mocked_aws(TABLE, BUCKET, versioned=True) as (dynamodb, s3):
            yield dynamodb, s3, TABLE, BUCKET
    finally:
        if endpoint is not None:
            os.environ["AWS_ENDPOINT_URL"] = endpoint


@contextmanager
def _on_server() -> Iterator[tuple[Any, Any, str, str]]:
    """A table and bucket of their own on the bench stack's moto server (a process of its own)."""
    from bench.stack import shared
    from rag_orchestrator.api.deps import process_aws
    from tests.fakes.moto_aws import provision

    aws = process_aws()

    shared()
    aws.reset()
    dynamodb, s3 = aws.client("dynamodb"), aws.client("s3")
    name = f"bench-archival-{uuid.uuid4().hex[:8]}"
    provision(dynamodb, s3, name, name, versioned=True)
    try:
        yield dynamodb, s3, name, name
    finally:
        dynamodb.delete_table(TableName=name)
        aws.reset()


def _archive(
    where: Callable[[], AbstractContextManager[tuple[Any, Any, str, str]]],
    count: int,
    workers: int,
    delay_ms: float,
) -> tuple[float, float, Counter[str]]:
    """Seconds to archive `count` seeded conversations, this process's CPU seconds meanwhile, and the
    requests sent per service."""
    from rag_orchestrator.conversations.archival import ArchivalJob
    from rag_orchestrator.conversations.table import Table
    from rag_orchestrator.domain.base import utcnow
    from tests.unit.test_archival import DAY, seed

    with where() as (dynamodb, s3, table, bucket):
        seed((dynamodb, s3), count, per_conversation=3, table=table)
        requests: Counter[str] = Counter()

        def sent(service: str, **_: Any) -> None:
            requests.update([service])
            time.sleep(delay_ms / 1000)

        for client in (dynamodb, s3):
            name = client.meta.service_model.service_name
            client.meta.events.register("before-send", lambda _name=name, **kw: sent(_name, **kw))
        job = ArchivalJob(
            Table(dynamodb, table),
            s3,
            bucket,
            archive_after=30 * DAY,
            retention=30 * DAY,
            forget=lambda conversation_id: None,  # nothing is purged here: archival only
            workers=workers,
        )
        started, cpu = time.perf_counter(), time.process_time()
        report = job.run(lambda: 10**9, utcnow())
        elapsed = time.perf_counter() - started
        cpu = time.process_time() - cpu
    if report.archived != count or report.failures:
        raise RuntimeError(f"archival incomplete: {report.as_dict()}")
    return elapsed, cpu, requests


def run(quick: bool = False) -> Section:
    from rag_orchestrator.conversations.archival import WORKERS

    section = Section("archival", packages=["moto", "boto3"])
    count = 200 if quick else COUNT
    elapsed, _, requests = _archive(_in_process, count, WORKERS, 0)
    section.add(
        f"{count} conversations archived (moto in-process, {WORKERS} workers)",
        "conversations/s",
        count / elapsed,
    )
    for service, n in sorted(requests.items()):
        section.add(f"{service} requests per archived conversation", "requests", n / count)
    scaled = 100 if quick else 200
    for where, place in ((_in_process, "moto in-process"), (_on_server, "moto server")):
        for workers in (1, WORKERS, 4 * WORKERS):
            elapsed, cpu, _ = _archive(where, scaled, workers, DELAY_MS)
            section.add(
                f"{scaled} conversations, {place}, {DELAY_MS} ms added per request, {workers} workers",
                "conversations/s",
                scaled / elapsed,
            )
            if where is _on_server:
                section.add(
                    f"the same: the job's own CPU per conversation, {workers} workers",
                    "ms",
                    cpu * 1000 / scaled,
                )
    return section
