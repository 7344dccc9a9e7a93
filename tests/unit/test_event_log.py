"""The EventLog contract on both implementations — memory, and DynamoDB on moto in-process — and the
DynamoDB log's keys, item layout and request counts."""

from __future__ import annotations

import json
import zlib
from collections import Counter

import pytest

from rag_orchestrator.conversations.table import Table
from rag_orchestrator.errors import TurnEnded, TurnNotFound
from rag_orchestrator.stream_log.dynamo import DynamoEventLog
from rag_orchestrator.stream_log.in_process import InProcessEventLog
from rag_orchestrator.stream_log.log import LOG_TTL_SECONDS, LoggedEvent, TurnEntry
from tests.fakes.moto_aws import mocked_aws

TABLE = "conversations-test"
NOW = 1_800_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def aws(monkeypatch):
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mocked_aws(TABLE, "transcripts-test") as clients:
        yield clients[0]


@pytest.fixture(params=["memory", "dynamodb"])
def log(request, clock):
    if request.param == "memory":
        return InProcessEventLog(clock=clock)
    return DynamoEventLog(Table(request.getfixturevalue("aws"), TABLE), clock=clock)


def entry(turn_id: str = "01TURN", caller: str = "alice") -> TurnEntry:
    return TurnEntry("conv-1", turn_id, caller, deadline=NOW + 30)


def batch(first: int, count: int) -> list[LoggedEvent]:
    return [LoggedEvent(n, "ResponseChunk", f'{{"content": "{n}"}}') for n in range(first, first + count)]


async def test_an_opened_turn_is_its_callers_alone(log):
    await log.open(entry())
    found = await log.get("conv-1", "01TURN", "alice")
    assert (found.status, found.last_seq, found.cancel_requested) == ("running", 0, False)
    assert found.deadline == NOW + 30 and found.caller_id == "alice"
    for conversation, turn, caller in [
        ("conv-1", "01TURN", "bob"),
        ("conv-2", "01TURN", "alice"),
        ("conv-1", "01X", "alice"),
    ]:
        with pytest.raises(TurnNotFound):
            await log.get(conversation, turn, caller)


async def test_events_come_back_in_order_and_from_a_batch_on(log):
    first = entry()
    await log.open(first)
    await log.append(first, batch(1, 3))
    await log.append(first, batch(4, 1))
    await log.append(first, batch(5, 2))
    assert [e.seq for e in await log.events("conv-1", "01TURN")] == [1, 2, 3, 4, 5, 6]
    assert [e.seq for e in await log.events("conv-1", "01TURN", 4)] == [4, 5, 6]
    assert await log.events("conv-1", "01TURN", 7) == []
    assert (await log.events("conv-1", "01TURN"))[2] == LoggedEvent(3, "ResponseChunk", '{"content": "3"}')
    await log.open(entry("01OTHER"))
    assert await log.events("conv-1", "01OTHER") == []  # another turn's batches are not its


async def test_a_report_answers_whether_a_cancel_was_asked_for(log):
    turn = entry()
    await log.open(turn)
    assert await log.report(turn, 3) is False
    await log.request_cancel("conv-1", "01TURN", "alice")
    assert await log.report(turn, 5) is True
    found = await log.get("conv-1", "01TURN", "alice")
    assert (found.last_seq, found.cancel_requested, found.status) == (0, True, "running")
    assert await log.report(turn, 7, ended=True) is True
    assert (await log.get("conv-1", "01TURN", "alice")).last_seq == 7  # written once, at the end


async def test_an_ended_turn_cannot_be_cancelled_and_others_cannot_cancel_at_all(log):
    turn = entry()
    await log.open(turn)
    with pytest.raises(TurnNotFound):
        await log.request_cancel("conv-1", "01TURN", "bob")
    with pytest.raises(TurnNotFound):
        await log.request_cancel("conv-1", "01NOPE", "alice")
    assert await log.report(turn, 9, ended=True) is False
    assert (await log.get("conv-1", "01TURN", "alice")).status == "ended"
    with pytest.raises(TurnEnded):
        await log.request_cancel("conv-1", "01TURN", "alice")


async def test_a_discarded_turn_is_gone_with_its_events_and_the_pointer_to_it(log):
    kept, gone = entry("01A"), entry("01AB")  # an id the other's begins with: still not the same turn
    await log.open(kept)
    await log.append(kept, batch(1, 2))
    await log.open(gone)
    await log.append(gone, batch(1, 3))
    await log.append(gone, batch(4, 1))
    await log.discard(gone)
    with pytest.raises(TurnNotFound):
        await log.get("conv-1", "01AB", "alice")
    assert await log.events("conv-1", "01AB") == []
    assert await log.running("conv-1", "alice") is None  # the pointer named it: gone too
    assert [e.seq for e in await log.events("conv-1", "01A")] == [1, 2]
    assert (await log.get("conv-1", "01A", "alice")).status == "running"
    await log.discard(kept)  # the pointer names another turn (none now): left alone, no error
    assert await log.events("conv-1", "01A") == []


async def test_the_running_turn_of_a_conversation_is_its_newest_while_it_runs(log, clock):
    assert await log.running("conv-1", "alice") is None
    first, second = entry("01A"), entry("01B")
    await log.open(first)
    assert (await log.running("conv-1", "alice")).turn_id == "01A"
    await log.open(second)
    assert (await log.running("conv-1", "alice")).turn_id == "01B"
    assert await log.running("conv-1", "bob") is None  # another caller's turn is no turn of theirs
    assert await log.running("conv-2", "alice") is None
    await log.report(second, 3, ended=True)
    assert await log.running("conv-1", "alice") is None  # the newest has ended: nothing runs
    third = entry("01C")
    await log.open(third)
    clock.now = third.deadline + LOG_TTL_SECONDS + 1
    assert await log.running("conv-1", "alice") is None


async def test_an_expired_turn_is_gone_though_the_table_has_not_deleted_it_yet(log, clock):
    turn = entry()
    await log.open(turn)
    await log.append(turn, batch(1, 2))
    clock.now = turn.deadline + LOG_TTL_SECONDS + 1
    with pytest.raises(TurnNotFound):
        await log.get("conv-1", "01TURN", "alice")
    with pytest.raises(TurnNotFound):
        await log.request_cancel("conv-1", "01TURN", "alice")
    assert await log.events("conv-1", "01TURN") == []
    assert await log.report(turn, 2) is False


async def test_dynamodb_items_sort_after_the_messages_and_carry_the_ttl(aws, clock):
    log = DynamoEventLog(Table(aws, TABLE), clock=clock)
    turn = entry()
    await log.open(turn)
    await log.append(turn, batch(1, 2))
    await log.append(turn, batch(3, 1))
    items = aws.query(
        TableName=TABLE,
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": "CONV#conv-1"}},
    )["Items"]
    assert [i["SK"]["S"] for i in items] == [
        "TURN#01TURN",
        "TURN#01TURN#00000001",
        "TURN#01TURN#00000003",
        "TURN$",  # the conversation's newest turn: after every batch, so a batch Query never reads it
    ]
    assert items[-1]["turnId"]["S"] == "01TURN" and items[-1]["callerId"]["S"] == "alice"
    assert {i["expiresAt"]["N"] for i in items} == {str(int(NOW + 30) + LOG_TTL_SECONDS)}
    assert items[0]["deadline"]["N"] == str(int((NOW + 30) * 1000))
    packed = json.loads(zlib.decompress(items[1]["events"]["B"]))  # [[type, JSON], …], compressed
    assert packed == [["ResponseChunk", '{"content": "1"}'], ["ResponseChunk", '{"content": "2"}']]
    assert "MSG$" < "TURN#"  # a turn's context Query (META to MSG$) never reaches them


async def test_dynamodb_request_counts(aws, clock):
    log = DynamoEventLog(Table(aws, TABLE), clock=clock)
    counts: Counter[str] = Counter()
    aws.meta.events.register("before-call.dynamodb", lambda model, **_: counts.update([model.name]))
    turn = entry()
    await log.open(turn)
    await log.append(turn, batch(1, 40))
    await log.report(turn, 40)  # running: a read, a fifth of a write's price
    await log.report(turn, 40, ended=True)
    await log.get("conv-1", "01TURN", "alice")
    await log.events("conv-1", "01TURN")
    await log.running("conv-1", "alice")
    assert counts == Counter({"PutItem": 3, "UpdateItem": 1, "GetItem": 4, "Query": 1})


def test_the_entry_expires_an_hour_after_its_deadline():
    assert entry().expires_at == int(NOW + 30) + 3600
