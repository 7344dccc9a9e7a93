"""CONVERSATION_RETENTION_DAYS in the archival job, on moto in-process (table from template.yaml): a
conversation idle longer is deleted, live or archived, then purged like any deleted one; one continued
or held by a turn is kept. The job runs with `now` moved ahead, as in test_archival.py."""

from __future__ import annotations

import time

import pytest

from rag_orchestrator.conversations import items as it
from rag_orchestrator.conversations.turn_data import Claim, TurnOutcome
from rag_orchestrator.domain.messages import Role
from rag_orchestrator.errors import ConversationNotFound
from tests.unit.store_contract import ALICE, LEASE, message
from tests.unit.test_archival import DAY, TABLE, aws, chatted, meta, partition, run, seed, store  # noqa: F401


def test_a_conversation_idle_past_the_retention_is_deleted_then_purged(aws, store):  # noqa: F811
    idle, _ = chatted(store)
    forgotten: list[str] = []
    early = run(aws, days_ahead=9, idle_retention=10 * DAY, forget=forgotten.append)
    assert early.retired == 0 and meta(aws, idle)["status"] == "ACTIVE"

    report = run(aws, days_ahead=11, idle_retention=10 * DAY, forget=forgotten.append)
    assert (report.retired, report.archived) == (1, 0)  # deleted, not archived first
    assert meta(aws, idle)["status"] == "DELETED" and forgotten == [idle]
    assert meta(aws, idle)["GSI3PK"] == it.archive_shard(idle, it.PURGE_PREFIX)
    with pytest.raises(ConversationNotFound):
        store.get(idle, ALICE)
    assert store.list_by_caller(ALICE).items == []

    assert run(aws, days_ahead=31, idle_retention=10 * DAY).purged == 1  # DELETED_RETENTION_DAYS later
    assert partition(aws, idle) == []


def test_an_archived_conversation_idle_past_the_retention_is_deleted_too(aws, store):  # noqa: F811
    archived, _ = chatted(store)
    assert run(aws, days_ahead=31, idle_retention=60 * DAY).archived == 1
    assert meta(aws, archived)["GSI3PK"] == it.archive_shard(
        archived, it.IDLE_PREFIX
    )  # listed, by its last message
    assert run(aws, days_ahead=59, idle_retention=60 * DAY).retired == 0

    report = run(aws, days_ahead=61, idle_retention=60 * DAY)
    assert report.retired == 1 and meta(aws, archived)["status"] == "DELETED"


def test_a_conversation_continued_or_held_by_a_turn_is_kept(aws, store):  # noqa: F811
    idle, continued, held = seed(aws, 3, per_conversation=2, age=40 * DAY)  # callers caller-0, -1, -2
    store.start_turn(Claim(continued, "caller-1", LEASE), message(continued, "back again"), "back")
    store.finish_turn(
        continued, TurnOutcome([message(continued, "yes", Role.ASSISTANT)], tool_calls=0, tokens=1)
    )
    # A turn that took the lock after the job listed the conversation (its own writes move lastMessageAt).
    aws[0].update_item(
        TableName=TABLE,
        Key={"PK": {"S": it.pk(held)}, "SK": {"S": it.META}},
        UpdateExpression="SET turnLockUntil = :until",
        ExpressionAttributeValues={":until": {"N": str(int(time.time()) + 300)}},
    )

    report = run(aws, days_ahead=0, idle_retention=30 * DAY)
    assert report.retired == 1 and meta(aws, idle)["status"] == "DELETED"
    assert meta(aws, continued)["status"] == "ACTIVE"  # its last message is today's
    assert meta(aws, held)["status"] == "ACTIVE"  # a turn holds it: left for a later run


def test_without_a_retention_nothing_is_deleted_for_being_idle(aws, store):  # noqa: F811
    cid, _ = chatted(store)
    assert run(aws, days_ahead=31).archived == 1
    report = run(aws, days_ahead=3650)
    assert report.retired == 0 and meta(aws, cid)["status"] == "ARCHIVED"
