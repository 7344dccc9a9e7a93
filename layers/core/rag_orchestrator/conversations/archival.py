"""The archival job (ArchiveFunction, hourly): idle conversations to S3 transcripts, deleted ones purged.

Candidates come from the sparse, sharded ByArchive index, never a Scan. Its partitions, per shard:
CLEANUP# (archived, message items not yet all removed: an earlier run stopped), PURGE# (DELETED, by
deletedAt), EXPIRE# (guests' conversations, by lastMessageAt), RETAIN# (purged conversations' audit
trails, by the end of their retention), with CONVERSATION_RETENTION_DAYS set IDLE# (ARCHIVED) and
ARCHIVE# (ACTIVE) by lastMessageAt for retention.py, and ARCHIVE# for archival, read in that order:
work left half done first, then retention, then archival. The steps per conversation are in
archive_steps.py.

Conversations run on a small thread pool (boto3 clients are thread-safe; botocore's adaptive retries
absorb throttling). The job starts nothing new once the remaining time falls under a safety margin,
lets what runs finish, and counts what is left for the next run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any

from rag_orchestrator.aws import AwsClients
from rag_orchestrator.config import Settings
from rag_orchestrator.conversations import items as it
from rag_orchestrator.conversations.archive_steps import (
    AUDIT_RETENTION,
    Checkpoint,
    ConversationArchiver,
    Forget,
    Outcome,
    Result,
)
from rag_orchestrator.conversations.keys import iso
from rag_orchestrator.conversations.retention import Retirer
from rag_orchestrator.conversations.table import Table
from rag_orchestrator.domain.base import utcnow
from rag_orchestrator.observability import logger, metrics

SAFETY_MARGIN_MS = 30_000
WORKERS = 8
INDEX = "ByArchive"


@dataclass
class ArchivalReport:
    archived: int = 0
    cleaned_up: int = 0  # archived by an earlier run that stopped before removing the message items
    purged: int = 0  # deleted conversations past their retention, and guests' past their reach
    trails_expired: int = 0  # audit trails of purged conversations past AUDIT_RETENTION_DAYS
    retired: int = 0  # idle past CONVERSATION_RETENTION_DAYS: deleted, purged later
    skipped: int = 0  # changed while being archived, a turn running, or no longer due
    failures: int = 0
    messages_moved: int = 0
    bytes_written: int = 0
    left: int = 0  # candidates not reached before the time ran out
    stopped_early: bool = False
    duration_ms: int = 0

    def add(self, result: Result | None) -> None:
        if result is None:
            self.failures += 1
            return
        match result.outcome:
            case Outcome.ARCHIVED:
                self.archived += 1
            case Outcome.CLEANED:
                self.cleaned_up += 1
            case Outcome.PURGED:
                self.purged += 1
            case Outcome.EXPIRED:
                self.trails_expired += 1
            case Outcome.RETIRED:
                self.retired += 1
            case Outcome.SKIPPED:
                self.skipped += 1
        if result.outcome not in (Outcome.PURGED, Outcome.EXPIRED):
            self.messages_moved += result.messages
        self.bytes_written += result.bytes

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


Step = Callable[[str, str], Result]


@dataclass(frozen=True, slots=True)
class Phase:
    prefix: str  # the ByArchive partition, per shard
    listed_before: str | None  # GSI3SK bound of the index query (None: every entry)
    step: Step
    due_before: str  # the step's own check, on the consistent read


class ArchivalJob:
    def __init__(
        self,
        table: Table,
        s3: Any,
        bucket: str,
        *,
        archive_after: timedelta,
        retention: timedelta,
        forget: Forget,
        guest_ttl: timedelta = timedelta(hours=24),
        idle_retention: timedelta | None = None,
        audit_retention: timedelta = AUDIT_RETENTION,
        checkpoint: Checkpoint | None = None,
        workers: int = WORKERS,
        margin_ms: int = SAFETY_MARGIN_MS,
        attachments_bucket: str | None = None,
    ) -> None:
        self._table = table
        self._archiver = ConversationArchiver(
            table,
            s3,
            bucket,
            forget=forget,
            checkpoint=checkpoint,
            audit_retention=audit_retention,
            attachments_bucket=attachments_bucket,
        )
        self._archive_after = archive_after
        self._retention = retention
        self._guest_ttl = guest_ttl
        self._idle_retention = idle_retention
        self._retirer = Retirer(table, forget, retention)
        self._workers = workers
        self._margin_ms = margin_ms

    def run(self, remaining_ms: Callable[[], int], now: datetime) -> ArchivalReport:
        started = time.monotonic()
        report = ArchivalReport()
        phases = self._phases(now)
        seen: set[str] = set()
        running: dict[Future[Result | None], str] = {}
        with ThreadPoolExecutor(self._workers, thread_name_prefix="archival") as pool:
            for step, before, conversation_id in self._candidates(phases):
                if conversation_id in seen:  # in two partitions: continued or deleted meanwhile
                    continue
                if remaining_ms() < self._margin_ms:
                    report.stopped_early = True
                    break
                while len(running) >= 2 * self._workers:
                    done, _ = wait(running, return_when=FIRST_COMPLETED)
                    for future in done:
                        running.pop(future)
                        report.add(future.result())
                seen.add(conversation_id)
                running[pool.submit(self._attempt, step, conversation_id, before)] = conversation_id
            for future in running:
                report.add(future.result())
        if report.stopped_early:
            report.left = self._count_left(phases)
        report.duration_ms = int((time.monotonic() - started) * 1000)
        return report

    def _phases(self, now: datetime) -> list[Phase]:
        """In the order they run. CLEANUP# entries are all due; the cutoff still applies to one found
        ACTIVE there (continued since). A guest's conversation is out of reach GUEST_TTL_HOURS after
        its last message, since no guest token lives longer."""
        archive_before, purge_before = iso(now - self._archive_after), iso(now - self._retention)
        guest_before, retained_before = iso(now - self._guest_ttl), iso(now)
        retire = []
        if self._idle_retention is not None:  # before archival: what is past both goes, not to S3
            idle_before = iso(now - self._idle_retention)
            retire = [
                Phase(it.IDLE_PREFIX, idle_before, self._retirer.retire, idle_before),
                Phase(it.ARCHIVE_PREFIX, idle_before, self._retirer.retire, idle_before),
            ]
        return [
            Phase(it.CLEANUP_PREFIX, None, self._archiver.archive, archive_before),
            Phase(it.PURGE_PREFIX, purge_before, self._archiver.purge, purge_before),
            Phase(it.EXPIRE_PREFIX, guest_before, self._archiver.purge, guest_before),
            Phase(it.RETAIN_PREFIX, retained_before, self._archiver.expire, retained_before),
            *retire,
            Phase(it.ARCHIVE_PREFIX, archive_before, self._archiver.archive, archive_before),
        ]

    def _candidates(self, phases: list[Phase]) -> Iterator[tuple[Step, str, str]]:
        for phase in phases:
            for shard in range(it.ARCHIVE_SHARDS):
                params = _shard_query(phase.prefix, shard, phase.listed_before) | {
                    "ProjectionExpression": "PK"
                }
                for page in self._pages(params):
                    for item in page.get("Items", ()):
                        yield phase.step, phase.due_before, item["PK"]["S"].removeprefix("CONV#")

    def _count_left(self, phases: list[Phase]) -> int:
        return sum(
            page.get("Count", 0)
            for phase in phases
            for shard in range(it.ARCHIVE_SHARDS)
            for page in self._pages(
                _shard_query(phase.prefix, shard, phase.listed_before) | {"Select": "COUNT"}
            )
        )

    def _pages(self, params: dict[str, Any]) -> Iterator[dict[str, Any]]:
        while True:
            page = self._table.call("query", **params)
            yield page
            if "LastEvaluatedKey" not in page:
                return
            params = params | {"ExclusiveStartKey": page["LastEvaluatedKey"]}

    @staticmethod
    def _attempt(step: Step, conversation_id: str, before: str) -> Result | None:
        """One conversation; a failure is logged and counted, and the next run takes it up again."""
        try:
            return step(conversation_id, before)
        except Exception:
            logger.exception("archival failed", extra={"conversation_id": conversation_id})
            return None


def _shard_query(prefix: str, shard: int, before: str | None) -> dict[str, Any]:
    values = {":pk": {"S": f"{prefix}{shard}"}}
    condition = "GSI3PK = :pk"
    if before is not None:
        condition += " AND GSI3SK < :before"
        values[":before"] = {"S": before}
    return {"IndexName": INDEX, "KeyConditionExpression": condition, "ExpressionAttributeValues": values}


def run_archival(
    settings: Settings,
    aws: AwsClients,
    *,
    remaining_ms: Callable[[], int],
    now: datetime | None = None,
    checkpoint: Checkpoint | None = None,
    workers: int = WORKERS,
    margin_ms: int = SAFETY_MARGIN_MS,
) -> ArchivalReport:
    """Archive what has been idle ARCHIVE_AFTER_DAYS, delete what has been idle
    CONVERSATION_RETENTION_DAYS, purge what was deleted DELETED_RETENTION_DAYS ago and guests'
    conversations out of reach, remove audit trails kept AUDIT_RETENTION_DAYS."""
    if settings.conversation_storage != "dynamodb":
        logger.info("archival skipped: CONVERSATION_STORAGE is not dynamodb")
        return ArchivalReport()
    from rag_orchestrator.retrieval.fragments import fragment_eraser

    job = ArchivalJob(
        Table(aws.client("dynamodb"), settings.conversations_table or ""),
        aws.client("s3"),
        settings.transcripts_bucket or "",
        archive_after=timedelta(days=settings.archive_after_days),
        retention=timedelta(days=settings.deleted_retention_days),
        guest_ttl=timedelta(hours=settings.guest_ttl_hours),
        idle_retention=(
            timedelta(days=settings.conversation_retention_days)
            if settings.conversation_retention_days
            else None
        ),
        audit_retention=timedelta(days=settings.audit_retention_days),
        # Also with MEMORY_ENABLED=false: fragments indexed before it was turned off go too.
        forget=fragment_eraser(settings),
        checkpoint=checkpoint,
        workers=workers,
        margin_ms=margin_ms,
        attachments_bucket=settings.attachments_bucket,
    )
    report = job.run(remaining_ms, now or utcnow())
    emit(report)
    return report


def emit(report: ArchivalReport) -> None:
    """The report as EMF metrics (published when the handler ends) and one log line."""
    for name, unit, value in (
        ("ConversationsArchived", "Count", report.archived),
        ("MessagesMoved", "Count", report.messages_moved),
        ("BytesWritten", "Bytes", report.bytes_written),
        ("ArchiveFailures", "Count", report.failures),
        ("ConversationsPurged", "Count", report.purged),
        ("ConversationsRetired", "Count", report.retired),
        ("AuditTrailsExpired", "Count", report.trails_expired),
        ("ArchiveDurationMs", "Milliseconds", report.duration_ms),
    ):
        metrics.add_metric(name=name, unit=unit, value=value)
    logger.info("archival done", extra=report.as_dict())
