"""Erasing a caller with 100 conversations (3 messages each; half archived to S3 first, so each of those
has a transcript) on the bench stack's moto server and Chroma: the requests each conversation costs per
service, the wall time, and the same with DELAY_MS held before every AWS request (a botocore hook), as
network time to DynamoDB and S3 in a region would add. The job runs as LifecycleFunction runs it
(lifecycle/runner.py's caller_eraser)."""

from __future__ import annotations

import time
import uuid
from collections import Counter
from datetime import timedelta
from typing import Any

from bench.report import Section

CONVERSATIONS = 100
DELAY_MS = 10


def _seed(aws: Any, table: str, bucket: str, caller: str, count: int) -> None:
    """`count` conversations of the caller, half of them archived by the archival job."""
    from rag_orchestrator.conversations import items as it
    from rag_orchestrator.conversations.archival import ArchivalJob
    from rag_orchestrator.conversations.table import Table
    from rag_orchestrator.domain.base import utcnow
    from rag_orchestrator.domain.conversations import Conversation, ConversationMessage
    from rag_orchestrator.domain.messages import Role

    values = []
    for n in range(count):
        moment = utcnow() - timedelta(days=40 if n % 2 else 0)
        conv = Conversation(
            caller_id=caller, created_at=moment, updated_at=moment, last_message_at=moment, message_count=3
        )
        values.append(it.conversation_item(conv))
        for m in range(3):
            role = Role.USER if m % 2 == 0 else Role.ASSISTANT
            sent = ConversationMessage(
                conversation_id=conv.conversation_id, role=role, content=f"message {m}", created_at=moment
            )
            values.append(it.message_item(sent, it.new_message_key()))
    dynamo = Table(aws.client("dynamodb"), table)
    dynamo.batch_put([it.to_attributes(v) for v in values])
    job = ArchivalJob(
        dynamo,
        aws.client("s3"),
        bucket,
        archive_after=timedelta(days=30),
        retention=timedelta(days=30),
        forget=lambda conversation_id: None,
    )
    report = job.run(lambda: 10**9, utcnow())
    if report.archived != count // 2:
        raise RuntimeError(f"seeding archived {report.archived}, not {count // 2}")


def _erase(count: int, delay_ms: float) -> tuple[float, float, Counter[str], dict[str, int]]:
    """Seconds to erase a seeded caller, this process's CPU seconds, requests per service, counts."""
    from bench.stack import shared
    from rag_orchestrator.api.deps import process_aws
    from rag_orchestrator.conversations.cursors import actor_key
    from rag_orchestrator.conversations.table import Table
    from rag_orchestrator.domain.audit import actor_ref
    from rag_orchestrator.lifecycle.jobs import ErasureJobs, ErasureRequest
    from rag_orchestrator.lifecycle.runner import caller_eraser

    stack = shared()
    stack.fresh_table()
    settings = stack.settings()
    aws = process_aws()
    table, bucket = settings.conversations_table or "", settings.transcripts_bucket or ""
    caller = f"bench-erase-{uuid.uuid4().hex[:8]}"
    _seed(aws, table, bucket, caller, count)
    started = ErasureJobs(Table(aws.client("dynamodb"), table)).start(
        ErasureRequest(caller, actor_ref(actor_key(settings), caller), {})
    )
    requests: Counter[str] = Counter()
    hooks = []
    for service in ("dynamodb", "s3"):
        client = aws.client(service)

        def sent(service: str = service, **_: Any) -> None:
            requests.update([service])
            if delay_ms:
                time.sleep(delay_ms / 1000)

        client.meta.events.register("before-send", sent)
        hooks.append((client, sent))
    try:
        began, cpu = time.perf_counter(), time.process_time()
        job = caller_eraser(settings, aws).run(started.erasure_id)
        elapsed, cpu = time.perf_counter() - began, time.process_time() - cpu
    finally:
        for client, hook in hooks:
            client.meta.events.unregister("before-send", hook)
    if job.get("status") != "COMPLETED" or job["counts"]["conversations"] != count:
        raise RuntimeError(f"erasure incomplete: {job}")
    return elapsed, cpu, requests, job["counts"]


def run(quick: bool = False) -> Section:
    section = Section("erasure", packages=["moto", "boto3", "chromadb"])
    count = 20 if quick else CONVERSATIONS
    elapsed, cpu, requests, counts = _erase(count, 0)
    section.add(f"a caller with {count} conversations erased (moto server, Chroma)", "s", elapsed)
    section.add("the same: the job's own CPU per conversation", "ms", cpu * 1000 / count)
    for service, n in sorted(requests.items()):
        section.add(f"{service} requests per erased conversation", "requests", n / count)
    section.details["counts"] = counts
    elapsed, _, _, _ = _erase(count, DELAY_MS)
    section.add(
        f"a caller with {count} conversations erased, {DELAY_MS} ms added per AWS request", "s", elapsed
    )
    return section
