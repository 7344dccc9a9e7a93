"""The store contract on DynamoDB and S3 (moto in-process, table from template.yaml), plus what
only this store has: index keys, archived transcripts, S3 offload of large texts, request counts,
no Scan."""

import threading
from collections import Counter

import boto3
import pytest

from rag_orchestrator.conversations.archive_steps import ConversationArchiver
from rag_orchestrator.conversations.dynamo import DynamoConversationStore
from rag_orchestrator.conversations.listing import Listing
from rag_orchestrator.conversations.table import Table
from rag_orchestrator.conversations.turn_data import Claim, TurnOutcome
from rag_orchestrator.domain.audit import GENESIS
from rag_orchestrator.domain.conversations import ConversationStatus
from rag_orchestrator.domain.messages import Role
from rag_orchestrator.errors import BadRequest, StorageUnavailable
from tests.fakes.moto_aws import mocked_aws
from tests.unit.store_contract import *  # noqa: F403 - the shared cases run here against this store
from tests.unit.store_contract import ALICE, LEASE, conversation, message, tool_round, turn
from tests.unit.store_features_contract import *  # noqa: F403 - titles, feedback, versions

TABLE, BUCKET = "conversations-test", "transcripts-test"
DUE = "9999-12-31T00:00:00.000000Z"  # archive whatever is asked, however recent


@pytest.fixture
def aws(monkeypatch):
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mocked_aws(TABLE, BUCKET) as clients:
        yield clients


@pytest.fixture
def store(aws) -> DynamoConversationStore:
    dynamodb, s3 = aws
    return DynamoConversationStore(TABLE, BUCKET, dynamodb=dynamodb, s3=s3, cursor_secret=b"k" * 32)


@pytest.fixture
def archive(aws):
    """Archive a conversation the way the archival job does (archive_steps.py)."""
    archiver = ConversationArchiver(Table(aws[0], TABLE), aws[1], BUCKET, forget=lambda conversation_id: None)

    def run(conversation_id: str) -> None:
        assert archiver.archive(conversation_id, DUE).outcome.value == "archived"

    return run


@pytest.fixture
def requests(aws):
    """DynamoDB requests by operation, as botocore sends them."""
    counts: Counter[str] = Counter()

    def count(model, **_):
        counts[model.name] += 1

    aws[0].meta.events.register("before-call.dynamodb", count)
    return counts


def meta_item(aws, conversation_id):
    key = {"PK": {"S": f"CONV#{conversation_id}"}, "SK": {"S": "META"}}
    return aws[0].get_item(TableName=TABLE, Key=key)["Item"]


def test_scan_is_refused_by_the_suite(aws):
    with pytest.raises(AssertionError, match="Scan"):
        aws[0].scan(TableName=TABLE)


async def test_one_turn_costs_three_requests(store, requests):
    conv = await store.create(conversation())
    cid = conv.conversation_id
    requests.clear()
    await store.start_turn(Claim(cid, ALICE, LEASE), message(cid, "question"), "client-1")
    assert dict(requests) == {"TransactWriteItems": 1}
    requests.clear()
    context = await store.context(cid, 20)
    assert dict(requests) == {"Query": 1}
    assert (context.audit_head, context.owner) == (GENESIS, ALICE)
    requests.clear()
    await store.finish_turn(
        cid, TurnOutcome(tool_round(cid), tool_calls=1, tokens=42, audit={"recordId": "R1"}, context=context)
    )
    assert dict(requests) == {"TransactWriteItems": 1}  # the audit record and the head in the same write
    assert [m.content for m in context.messages] == ["question"]
    assert (await store.get(cid, ALICE)).message_count == 4
    (record,) = (await store.audit(cid)).records
    assert record["prevHash"] == GENESIS and (await store.context(cid, 20)).audit_head == record["hash"]


async def test_a_head_moved_under_a_turn_is_chained_onto_not_overwritten(store, requests):
    """A turn whose lease ran out while another turn ran: its record follows the other's."""
    cid = (await store.create(conversation())).conversation_id
    stale = await store.context(cid, 20)
    await store.finish_turn(
        cid, TurnOutcome([], tool_calls=0, tokens=0, audit={"recordId": "R1"}, context=stale)
    )
    requests.clear()
    await store.finish_turn(
        cid, TurnOutcome([], tool_calls=0, tokens=0, audit={"recordId": "R2"}, context=stale)
    )
    assert dict(requests) == {"TransactWriteItems": 2}  # refused once, then sealed onto the head it returned
    trail = await store.audit(cid)
    assert [r["recordId"] for r in trail.records] == ["R1", "R2"]
    assert trail.records[1]["prevHash"] == trail.records[0]["hash"] and trail.chain_valid


async def test_its_methods_run_in_a_worker_thread(store, aws):
    threads: set[int] = set()
    aws[0].meta.events.register("before-call.dynamodb", lambda **_: threads.add(threading.get_ident()))
    conv = await store.create(conversation())
    await store.get(conv.conversation_id, ALICE)
    await store.window(conv.conversation_id, 5)
    assert threads and threading.get_ident() not in threads


async def test_a_conversation_sits_in_the_indexes_its_state_calls_for(aws, store, archive):
    conv = await store.create(conversation(user_id="u-1"))
    cid = conv.conversation_id
    item = meta_item(aws, cid)
    assert item["GSI1PK"]["S"] == f"CALLER#{ALICE}"
    assert item["GSI1SK"]["S"].endswith(f"#{cid}")
    assert item["GSI3PK"]["S"].startswith("ARCHIVE#")
    assert 0 <= int(item["GSI3PK"]["S"].removeprefix("ARCHIVE#")) < 16

    archive(cid)
    assert meta_item(aws, cid)["GSI3PK"]["S"].startswith("IDLE#")  # archived: where retention finds it
    await store.soft_delete(cid, ALICE)
    deleted = meta_item(aws, cid)
    assert deleted["GSI1PK"]["S"] == f"GONE#{ALICE}"  # out of the listing; where an erasure finds it
    assert deleted["GSI3PK"]["S"].startswith("PURGE#")  # found by the archival job's purge
    assert deleted["status"]["S"] == "DELETED"
    assert int(deleted["expiresAt"]["N"]) > 0


async def test_active_conversations_are_found_by_the_archive_index(aws, store):
    conv = await store.create(conversation(age_seconds=3600))
    shard = meta_item(aws, conv.conversation_id)["GSI3PK"]["S"]
    found = aws[0].query(
        TableName=TABLE,
        IndexName="ByArchive",
        KeyConditionExpression="GSI3PK = :s",
        ExpressionAttributeValues={":s": {"S": shard}},
    )["Items"]
    assert conv.conversation_id in {i["PK"]["S"].removeprefix("CONV#") for i in found}


async def test_listing_filters_by_archived_status_across_pages(store, archive):
    made = [await store.create(conversation(age_seconds=100 - i)) for i in range(12)]
    archived = made[::3]
    for c in archived:
        archive(c.conversation_id)
    await store.soft_delete(made[1].conversation_id, ALICE)
    first = await store.list_by_caller(ALICE, where=Listing(status=ConversationStatus.ARCHIVED), limit=3)
    second = await store.list_by_caller(
        ALICE, where=Listing(status=ConversationStatus.ARCHIVED), limit=3, cursor=first.next_cursor
    )
    assert {c.conversation_id for c in first.items + second.items} == {c.conversation_id for c in archived}
    assert second.next_cursor is None
    active = (
        await store.list_by_caller(ALICE, where=Listing(status=ConversationStatus.ACTIVE), limit=100)
    ).items
    assert {c.conversation_id for c in active} == {
        c.conversation_id for c in made if c not in archived and c is not made[1]
    }
    assert len((await store.list_by_caller(ALICE, limit=100)).items) == 11


async def test_an_archived_conversation_reads_its_transcript(store, archive):
    new = conversation()
    cid = new.conversation_id
    await store.create(new)
    await turn(store, cid, "old question", message(cid, "old answer", Role.ASSISTANT, reasoning="why"))
    archive(cid)
    archived = await store.get(cid, ALICE)
    assert archived.status is ConversationStatus.ARCHIVED
    assert archived.s3_key == f"transcripts/{ALICE}/{cid}.jsonl"
    page = await store.messages(cid, ALICE, limit=1)
    assert [m.content for m in page.items] == ["old question"]
    rest = await store.messages(cid, ALICE, limit=5, cursor=page.next_cursor)
    assert [(m.content, m.reasoning) for m in rest.items] == [("old answer", "why")]
    assert rest.next_cursor is None
    assert [m.content for m in await store.window(cid, 5)] == ["old question", "old answer"]

    await turn(store, cid, "new question", message(cid, "new answer", Role.ASSISTANT))
    continued = await store.get(cid, ALICE)  # active again; the transcript keeps the older messages
    assert (continued.status, continued.s3_key) == (ConversationStatus.ACTIVE, archived.s3_key)
    contents = [m.content for m in (await store.messages(cid, ALICE, limit=10)).items]
    assert contents == ["old question", "old answer", "new question", "new answer"]
    assert [m.content for m in await store.window(cid, 3)] == ["old answer", "new question", "new answer"]


async def test_contents_over_300_kb_go_to_s3_and_come_back(aws, store):
    conv = await store.create(conversation())
    cid = conv.conversation_id
    big = "é" * 200_000  # 400 KB of UTF-8
    thoughts = "t" * 150_000
    sent = message(cid, big, Role.ASSISTANT, reasoning=thoughts)
    await turn(store, cid, "small", sent)

    stored = aws[0].query(
        TableName=TABLE,
        KeyConditionExpression="PK = :p AND begins_with(SK, :m)",
        ExpressionAttributeValues={":p": {"S": f"CONV#{cid}"}, ":m": {"S": "MSG#"}},
    )["Items"]
    large = next(i for i in stored if i["messageId"]["S"] == sent.message_id)
    assert "content" not in large
    assert large["contentS3Key"]["S"] == f"contents/{cid}/{sent.message_id}.content.txt"
    assert large["reasoning"]["S"] == thoughts  # what is left fits in the item
    body = aws[1].get_object(Bucket=BUCKET, Key=large["contentS3Key"]["S"])["Body"].read()
    assert body.decode() == big

    assert (await store.window(cid, 5))[-1] == sent
    assert (await store.messages(cid, ALICE)).items[-1] == sent


async def test_a_turn_with_more_messages_than_one_transaction_holds(store, requests):
    conv = await store.create(conversation())
    cid = conv.conversation_id
    await store.start_turn(Claim(cid, ALICE, LEASE), message(cid, "q"))
    produced = [message(cid, f"step {i}", Role.ASSISTANT) for i in range(150)]
    requests.clear()
    await store.finish_turn(cid, TurnOutcome(produced, tool_calls=0, tokens=0))
    assert requests["TransactWriteItems"] == 1
    assert requests["BatchWriteItem"] == 3  # the 51 oldest, in chunks of 25
    assert (await store.get(cid, ALICE)).message_count == 151
    assert [m.content for m in await store.window(cid, 3)] == ["step 147", "step 148", "step 149"]
    everything = await store.messages(cid, ALICE, limit=100)
    rest = await store.messages(cid, ALICE, limit=100, cursor=everything.next_cursor)
    assert [m.content for m in everything.items + rest.items] == ["q", *(m.content for m in produced)]


async def test_a_cursor_pointing_outside_the_callers_partition_is_refused(store):
    await store.create(conversation())
    forged = store._cursors.encode(
        {"PK": "CONV#x", "SK": "META", "GSI1PK": "CALLER#bob", "GSI1SK": "2020"},
        Listing().scope(f"CALLER#{ALICE}"),
    )
    with pytest.raises(BadRequest):
        await store.list_by_caller(ALICE, cursor=forged)


async def test_dynamodb_unreachable_is_storage_unavailable(monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    from botocore.config import Config

    quick = Config(connect_timeout=0.2, retries={"max_attempts": 1})
    dynamodb = boto3.client("dynamodb", region_name="us-east-1", config=quick)
    s3 = boto3.client("s3", region_name="us-east-1", config=quick)
    store = DynamoConversationStore(TABLE, BUCKET, dynamodb=dynamodb, s3=s3, cursor_secret=b"k" * 32)
    with pytest.raises(StorageUnavailable):
        await store.get("00000000-0000-4000-8000-000000000000", ALICE)
