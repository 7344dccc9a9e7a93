"""The archival job on moto in-process (table from template.yaml): archive and read back, continue
after archive, races, crashes between steps, the remaining-time stop, retention purge.

Conversations are made due by running the job with `now` 31 days ahead (ARCHIVE_AFTER_DAYS=30)."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import timedelta

import pytest

from rag_orchestrator.aws import AwsClients
from rag_orchestrator.conversations import items as it
from rag_orchestrator.conversations.archival import ArchivalJob, run_archival
from rag_orchestrator.conversations.dynamo import DynamoConversationStore
from rag_orchestrator.conversations.table import Table
from rag_orchestrator.conversations.transcripts import from_jsonl, transcript_key
from rag_orchestrator.conversations.turn_data import Claim, TurnOutcome
from rag_orchestrator.domain.base import utcnow
from rag_orchestrator.domain.conversations import (
    Conversation,
    ConversationMessage,
    ConversationStatus,
    MessageResponse,
)
from rag_orchestrator.domain.messages import Role
from rag_orchestrator.errors import VectorStoreUnavailable
from tests.fakes.moto_aws import mocked_aws
from tests.unit.store_contract import ALICE, LEASE, conversation, message, tool_round

TABLE, BUCKET = "conversations-archival", "transcripts-archival"
DAY = timedelta(days=1)
FAR = 10**9  # remaining milliseconds that never run out


@pytest.fixture
def aws(monkeypatch):
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mocked_aws(TABLE, BUCKET, versioned=True) as clients:
        yield clients


class Blocking:
    """The store called from synchronous code: these tests and the archival job's checkpoints."""

    def __init__(self, inner: DynamoConversationStore) -> None:
        self.inner = inner

    def __getattr__(self, name: str):
        method = getattr(self.inner, name)
        return lambda *args, **kwargs: asyncio.run(method(*args, **kwargs))


@pytest.fixture
def store(aws) -> Blocking:
    return Blocking(
        DynamoConversationStore(TABLE, BUCKET, dynamodb=aws[0], s3=aws[1], cursor_secret=b"k" * 32)
    )


def add(store, cid: str, question: ConversationMessage, *produced: ConversationMessage) -> None:
    """One more turn, outside the job."""
    store.start_turn(Claim(cid, ALICE, LEASE), question)
    store.finish_turn(cid, TurnOutcome(list(produced), tool_calls=0, tokens=0))


def run(
    aws, *, days_ahead: int = 31, remaining_ms=lambda: FAR, forget=lambda conversation_id: None, **options
):
    job = ArchivalJob(
        Table(aws[0], TABLE),
        aws[1],
        BUCKET,
        archive_after=30 * DAY,
        retention=30 * DAY,
        forget=forget,
        **options,
    )
    return job.run(remaining_ms, utcnow() + days_ahead * DAY)


def meta(aws, cid) -> dict:
    key = {"PK": {"S": it.pk(cid)}, "SK": {"S": it.META}}
    return it.from_attributes(aws[0].get_item(TableName=TABLE, Key=key, ConsistentRead=True).get("Item", {}))


def partition(aws, cid) -> list[str]:
    """Every sort key left in the conversation's partition."""
    found = aws[0].query(
        TableName=TABLE,
        KeyConditionExpression="PK = :p",
        ExpressionAttributeValues={":p": {"S": it.pk(cid)}},
        ConsistentRead=True,
    )["Items"]
    return [i["SK"]["S"] for i in found]


def transcript(aws, cid, caller=ALICE) -> list[ConversationMessage]:
    body = aws[1].get_object(Bucket=BUCKET, Key=transcript_key(caller, cid))["Body"].read()
    return from_jsonl(body)


def everything(store, cid) -> list[ConversationMessage]:
    page = store.messages(cid, ALICE, limit=100)
    assert page.next_cursor is None
    return page.items


def chatted(store, turns: int = 1) -> tuple[str, list[ConversationMessage]]:
    """A conversation with `turns` whole turns: question, tool call with reasoning, result, answer."""
    cid = store.create(conversation()).conversation_id
    sent = []
    for n in range(turns):
        question = message(cid, f"question {n}")
        store.start_turn(Claim(cid, ALICE, LEASE), question, f"client-{n}")
        produced = tool_round(cid)
        store.finish_turn(cid, TurnOutcome(produced, tool_calls=1, tokens=10))
        sent += [question, *produced]
    return cid, sent


def ids(messages) -> list[str]:
    return [m.message_id for m in messages]


# ------------------------------------------------------------------ archive, read back, continue


def test_archive_then_read_back_every_message_in_order(aws, store):
    cid, sent = chatted(store, turns=2)
    question = message(cid, "and a long one?")
    big = message(cid, "é" * 200_000, Role.ASSISTANT, reasoning="t" * 150_000)  # content offloaded to S3
    add(store, cid, question, big)
    sent += [question, big]
    offloaded = f"contents/{cid}/{big.message_id}.content.txt"
    assert aws[1].head_object(Bucket=BUCKET, Key=offloaded)

    report = run(aws)

    assert (report.archived, report.messages_moved, report.failures, report.skipped) == (1, 10, 0, 0)
    assert report.bytes_written > 400_000 and not report.stopped_early and report.left == 0
    stored = meta(aws, cid)
    assert stored["status"] == "ARCHIVED" and stored["s3Key"] == transcript_key(ALICE, cid)
    assert "archivedAt" in stored and stored["GSI3PK"] == it.archive_shard(cid, it.IDLE_PREFIX)
    assert stored["GSI3SK"] == stored["lastMessageAt"]  # where retention finds it, by its last message
    assert [k for k in partition(aws, cid) if k.startswith(it.MSG_PREFIX)] == []
    assert sorted(k for k in partition(aws, cid)) == ["CMID#client-0", "CMID#client-1", "META"]
    assert aws[1].list_objects_v2(Bucket=BUCKET, Prefix=f"contents/{cid}/").get("KeyCount") == 0

    # the transcript is internal storage: everything, reasoning included
    assert transcript(aws, cid) == sent
    # the API reads it back whole and in order, tool calls intact, reasoning never shown
    read = everything(store, cid)
    assert read == sent
    assert read[1].tool_calls[0].function.name == "rag_search" and read[2].tool_call_id == "call-1"
    assert all("reasoning" not in MessageResponse.of(m).model_dump() for m in read)
    conversation_view = store.get(cid, ALICE)
    assert conversation_view.status is ConversationStatus.ARCHIVED
    assert conversation_view.s3_key == transcript_key(ALICE, cid)
    assert store.window(cid, 3) == sent[-3:]


def test_running_twice_archives_nothing_twice(aws, store):
    cid, sent = chatted(store)
    first = run(aws)
    before = aws[1].head_object(Bucket=BUCKET, Key=transcript_key(ALICE, cid))["ETag"]
    second = run(aws)
    assert (first.archived, second.archived, second.cleaned_up, second.skipped) == (1, 0, 0, 0)
    assert aws[1].head_object(Bucket=BUCKET, Key=transcript_key(ALICE, cid))["ETag"] == before
    assert everything(store, cid) == sent


def test_continue_after_archive_then_archive_again(aws, store):
    cid, sent = chatted(store)
    run(aws)

    # the loop: start_turn, then window, then finish_turn
    question = message(cid, "and now?")
    store.start_turn(Claim(cid, ALICE, LEASE), question)
    assert store.window(cid, 20) == [*sent, question]  # the older messages come from the transcript
    answer = message(cid, "here", Role.ASSISTANT)
    store.finish_turn(cid, TurnOutcome([answer], tool_calls=0, tokens=2))
    continued = meta(aws, cid)
    assert continued["status"] == "ACTIVE" and continued["s3Key"] == transcript_key(ALICE, cid)
    assert continued["GSI3PK"] == it.archive_shard(cid)  # an archival candidate again
    assert everything(store, cid) == [*sent, question, answer]
    assert not run(aws, days_ahead=0).archived  # not idle yet

    again = run(aws)
    assert (again.archived, again.messages_moved) == (1, 2)
    assert transcript(aws, cid) == [*sent, question, answer]  # every message once
    assert everything(store, cid) == [*sent, question, answer]
    assert meta(aws, cid)["status"] == "ARCHIVED"


def test_a_conversation_touched_during_the_run_is_skipped(aws, store):
    cid, sent = chatted(store)
    late = message(cid, "one more thing")

    def touch(step, conversation_id):
        if step == "read":
            add(store, conversation_id, late)

    report = run(aws, checkpoint=touch)
    assert (report.archived, report.skipped) == (0, 1)
    assert meta(aws, cid)["status"] == "ACTIVE"
    assert everything(store, cid) == [*sent, late]

    assert run(aws).archived == 1
    assert transcript(aws, cid) == [*sent, late]


def test_a_running_turn_is_left_alone(aws, store):
    cid, _ = chatted(store)
    store.start_turn(Claim(cid, ALICE, LEASE), message(cid, "thinking..."))
    report = run(aws)
    assert (report.archived, report.skipped) == (0, 1)
    assert meta(aws, cid)["status"] == "ACTIVE"


class Crash(Exception):
    pass


@pytest.mark.parametrize("step", ["written", "marked"])
def test_a_crash_between_steps_is_finished_by_the_next_run(aws, store, step):
    """'written': the transcript is in S3, the status not yet changed; 'marked': ARCHIVED, the message
    items not yet deleted. Readers see every message exactly once meanwhile; a re-run completes."""
    cid, sent = chatted(store, turns=2)
    other, other_sent = chatted(store)

    def crash(at, conversation_id):
        if at == step and conversation_id == cid:
            raise Crash(at)

    report = run(aws, checkpoint=crash)
    assert (report.failures, report.archived) == (1, 1)  # the other conversation went through
    state = meta(aws, cid)
    assert everything(store, cid) == sent
    if step == "written":
        assert state["status"] == "ACTIVE" and "s3Key" not in state
    else:
        assert state["status"] == "ARCHIVED" and state["GSI3PK"] == it.archive_shard(cid, it.CLEANUP_PREFIX)
        assert len([k for k in partition(aws, cid) if k.startswith(it.MSG_PREFIX)]) == len(sent)

    again = run(aws)
    assert (again.failures, again.messages_moved) == (0, len(sent))
    assert (again.archived, again.cleaned_up) == ((1, 0) if step == "written" else (0, 1))
    state = meta(aws, cid)
    assert state["status"] == "ARCHIVED" and state["GSI3PK"] == it.archive_shard(cid, it.IDLE_PREFIX)
    assert [k for k in partition(aws, cid) if k.startswith(it.MSG_PREFIX)] == []
    assert transcript(aws, cid) == sent
    assert everything(store, cid) == sent
    assert everything(store, other) == other_sent
    assert run(aws).archived == 0


def test_a_conversation_continued_before_the_cleanup_keeps_every_message(aws, store):
    cid, sent = chatted(store)

    def crash(at, conversation_id):
        if at == "marked":
            raise Crash(at)

    run(aws, checkpoint=crash)
    question = message(cid, "back again")
    store.start_turn(Claim(cid, ALICE, LEASE), question)  # ACTIVE again; the old items still there
    store.finish_turn(cid, TurnOutcome([], tool_calls=0, tokens=0))
    assert meta(aws, cid)["GSI3PK"] == it.archive_shard(cid)
    assert everything(store, cid) == [*sent, question]
    assert run(aws).archived == 1
    assert transcript(aws, cid) == [*sent, question]
    assert everything(store, cid) == [*sent, question]


# ------------------------------------------------------------------ many conversations, the time limit


def seed(
    aws, count: int, per_conversation: int, *, table: str = TABLE, age: timedelta = 40 * DAY
) -> list[str]:
    """`count` idle conversations written directly with BatchWriteItem."""
    old = utcnow() - age
    values, made = [], []
    for n in range(count):
        conv = Conversation(
            caller_id=f"caller-{n % 7}",
            created_at=old,
            updated_at=old,
            last_message_at=old,
            message_count=per_conversation,
        )
        made.append(conv.conversation_id)
        values.append(it.conversation_item(conv))
        for m in range(per_conversation):
            role = Role.USER if m % 2 == 0 else Role.ASSISTANT
            sent = ConversationMessage(
                conversation_id=conv.conversation_id, role=role, content=f"message {m} of {n}", created_at=old
            )
            values.append(it.message_item(sent, it.new_message_key()))
    Table(aws[0], table).batch_put([it.to_attributes(v) for v in values])
    return made


def test_one_thousand_conversations_with_the_remaining_time_stop(aws, store):
    made = seed(aws, 1000, per_conversation=3)
    budget = {"calls": 0}

    def remaining_ms() -> int:  # falls under the margin after 400 conversations were started
        budget["calls"] += 1
        return 60_000 if budget["calls"] <= 400 else 5_000

    first = run(aws, days_ahead=0, remaining_ms=remaining_ms)
    assert first.stopped_early and first.failures == 0
    assert first.archived == 400 and first.left == 600

    second = run(aws, days_ahead=0)
    assert (second.archived, second.left, second.failures, second.stopped_early) == (600, 0, 0, False)
    assert second.messages_moved == 1800
    statuses = Counter(meta(aws, cid)["status"] for cid in made)
    assert statuses == {"ARCHIVED": 1000}
    sample = made[::97]
    for cid in sample:
        caller = meta(aws, cid)["callerId"]
        assert [m.content for m in transcript(aws, cid, caller)] == [
            f"message {m} of {made.index(cid)}" for m in range(3)
        ]


def test_requests_per_archived_conversation(aws, store):
    chatted(store)
    requests: Counter[str] = Counter()
    for client in aws:
        client.meta.events.register("before-call", lambda model, **_: requests.update([model.name]))
    run(aws)
    # CLEANUP#, PURGE#, EXPIRE#, RETAIN#, ARCHIVE# in every shard, once per run
    index_queries = 5 * it.ARCHIVE_SHARDS
    assert requests == {
        "Query": index_queries + 2,  # + META and the messages, in one page; + the audit records
        "PutObject": 1,
        "HeadObject": 1,  # the verification
        "UpdateItem": 2,  # ARCHIVED (conditional), then out of the CLEANUP# partition
        "BatchWriteItem": 1,  # 4 messages: one batch
    }


# ------------------------------------------------------------------ retention


def test_deleted_conversations_are_purged_after_the_retention_not_before(aws, store):
    cid, _ = chatted(store)
    run(aws)  # archived: a transcript in S3
    store.start_turn(Claim(cid, ALICE, LEASE), message(cid, "x" * 310_000), "again")  # content offloaded
    store.finish_turn(cid, TurnOutcome([message(cid, "y", Role.ASSISTANT)], tool_calls=0, tokens=1))
    store.soft_delete(cid, ALICE)
    kept, _ = chatted(store)
    assert meta(aws, cid)["GSI3PK"] == it.archive_shard(cid, it.PURGE_PREFIX)

    early = run(aws, days_ahead=29)
    assert early.purged == 0
    assert "META" in partition(aws, cid)

    report = run(aws, days_ahead=31)
    assert report.purged == 1
    assert partition(aws, cid) == []
    versions = aws[1].list_object_versions(Bucket=BUCKET, Prefix=transcript_key(ALICE, cid))
    assert not versions.get("Versions") and not versions.get("DeleteMarkers")
    contents = aws[1].list_object_versions(Bucket=BUCKET, Prefix=f"contents/{cid}/")
    assert not contents.get("Versions") and not contents.get("DeleteMarkers")
    assert meta(aws, kept)["status"] == "ARCHIVED"  # the other conversation was only archived
    assert run(aws, days_ahead=31).purged == 0


def test_the_purge_forgets_the_fragments_first_and_a_failure_leaves_it_for_the_next_run(aws, store):
    cid, _ = chatted(store)
    store.soft_delete(cid, ALICE)

    def chroma_down(conversation_id: str) -> None:
        raise VectorStoreUnavailable("Chroma unreachable (ConnectError)")

    failed = run(aws, forget=chroma_down)
    assert (failed.purged, failed.failures) == (0, 1)
    assert "META" in partition(aws, cid) and meta(aws, cid)["status"] == "DELETED"

    forgotten: list[str] = []
    assert run(aws, forget=forgotten.append).purged == 1
    assert forgotten == [cid] and partition(aws, cid) == []


# ------------------------------------------------------------------ entry point


def test_run_archival_uses_the_configured_clients_and_emits_metrics(aws, store, monkeypatch):
    from rag_orchestrator.config import load_settings
    from rag_orchestrator.observability import metrics

    chatted(store)
    settings = load_settings(
        conversation_storage="dynamodb",
        conversations_table=TABLE,
        transcripts_bucket=BUCKET,
        archive_after_days=0,
    )
    metrics.clear_metrics()
    report = run_archival(settings, AwsClients(), remaining_ms=lambda: FAR, now=utcnow() + DAY)
    assert report.archived == 1
    emitted = set(metrics.metric_set)
    metrics.clear_metrics()
    assert emitted == {
        "ConversationsArchived",
        "MessagesMoved",
        "BytesWritten",
        "ArchiveFailures",
        "ConversationsPurged",
        "ConversationsRetired",
        "AuditTrailsExpired",
        "ArchiveDurationMs",
    }


def test_memory_storage_has_nothing_to_archive():
    from rag_orchestrator.config import load_settings

    report = run_archival(
        load_settings(conversation_storage="memory"), AwsClients(), remaining_ms=lambda: FAR
    )
    assert report.archived == 0 and report.failures == 0


def test_the_purge_removes_the_conversations_attachments_and_their_files(aws, store):
    from rag_orchestrator.attachments.dynamo_store import DynamoAttachmentStore
    from rag_orchestrator.domain.attachments import Attachment, AttachmentStatus, Segment, conversation_prefix

    files = "attachments-archival"
    aws[1].create_bucket(Bucket=files)
    cid, _ = chatted(store)
    kept, _ = chatted(store)
    attachments = Blocking(DynamoAttachmentStore(TABLE, BUCKET, dynamodb=aws[0], s3=aws[1]))
    attachment = Attachment(
        conversation_id=cid, caller_id=ALICE, file_name="a.txt", content_type="text/plain", size_bytes=1
    )
    attachments.create(attachment)
    attachments.claim(attachment, 0, 10)
    big = [Segment(modality="document", text="z" * 310_000, index=0)]
    attachments.finish(attachment.model_copy(update={"status": AttachmentStatus.READY, "segments": big}))
    for owned in (cid, kept):
        aws[1].put_object(Bucket=files, Key=conversation_prefix(ALICE, owned) + "file-1", Body=b"x")
    store.soft_delete(cid, ALICE)

    assert run(aws, days_ahead=31, attachments_bucket=files).purged == 1

    assert partition(aws, cid) == []  # the ATT# item too
    assert aws[1].list_objects_v2(Bucket=BUCKET, Prefix=f"contents/{cid}/")["KeyCount"] == 0  # its segments
    left = aws[1].list_objects_v2(Bucket=files)["Contents"]
    assert [o["Key"] for o in left] == [conversation_prefix(ALICE, kept) + "file-1"]


def test_the_purge_leaves_the_files_of_a_caller_whose_id_extends_the_conversations_prefix(aws, store):
    """Caller ids may hold `/`: caller `<ALICE>/<cid>`'s files lie under ALICE's conversation `cid`'s prefix."""
    from rag_orchestrator.domain.attachments import conversation_prefix, object_key

    files = "attachments-archival"
    aws[1].create_bucket(Bucket=files)
    cid, _ = chatted(store)
    mine, theirs = object_key(ALICE, cid, "a1"), object_key(f"{ALICE}/{cid}", "c2", "a2")
    assert theirs.startswith(conversation_prefix(ALICE, cid))
    for key in (mine, theirs):
        aws[1].put_object(Bucket=files, Key=key, Body=b"x")
    store.soft_delete(cid, ALICE)

    assert run(aws, days_ahead=31, attachments_bucket=files).purged == 1

    assert [o["Key"] for o in aws[1].list_objects_v2(Bucket=files)["Contents"]] == [theirs]


def test_a_purge_stopped_half_way_keeps_the_audit_trail_and_the_next_run_finishes(aws, store, monkeypatch):
    cid = store.create(conversation()).conversation_id
    for n in range(2):
        store.start_turn(Claim(cid, ALICE, LEASE), message(cid, f"q{n}"))
        context = store.context(cid, 5)
        answer = message(cid, f"a{n}", Role.ASSISTANT)
        store.finish_turn(
            cid, TurnOutcome([answer], tool_calls=0, tokens=1, audit={"recordId": f"R{n}"}, context=context)
        )
    before = store.audit(cid)
    store.soft_delete(cid, ALICE)

    def crash(self, keys):
        raise RuntimeError("the function stopped here")

    with monkeypatch.context() as patched:
        patched.setattr(Table, "batch_delete", crash)  # after the trail is handed over, before META goes
        assert run(aws).failures == 1
    assert {"META", "AUDIT$"} <= set(partition(aws, cid))
    assert run(aws).purged == 1
    assert sorted(partition(aws, cid)) == ["AUDIT#R0", "AUDIT#R1", "AUDIT$"]
    assert store.audit(cid) == before  # the head moved to AUDIT$ with the records

    assert run(aws, days_ahead=300).trails_expired == 0
    assert run(aws, days_ahead=31 + 366).trails_expired == 1
    assert partition(aws, cid) == []
