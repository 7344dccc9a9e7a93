"""The store contract on DynamoDB and S3 (moto in-process, table from template.yaml), plus what
only this store has: index keys, S3 offload of large texts, request counts, no Scan."""

from collections import Counter

import boto3
import pytest

from rag_orchestrator.conversations.dynamo import DynamoConversationStore
from rag_orchestrator.conversations.transcripts import S3Transcripts
from rag_orchestrator.domain.messages import Role
from tests.fakes.moto_aws import mocked_aws
from tests.unit.store_contract import *  # noqa: F403 - the shared cases run here against this store
from tests.unit.store_contract import ALICE, LEASE, conversation, message, tool_round

TABLE, BUCKET = "conversations-test", "transcripts-test"


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
def transcripts(aws) -> S3Transcripts:
    return S3Transcripts(aws[1], BUCKET)


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


def test_one_turn_costs_three_requests(store, requests):
    conv = store.create(conversation())
    cid = conv.conversation_id
    requests.clear()
    store.start_turn(cid, ALICE, message(cid, "question"), "client-1", LEASE)
    assert dict(requests) == {"TransactWriteItems": 1}
    requests.clear()
    window = store.window(cid, 20)
    assert dict(requests) == {"Query": 1}
    requests.clear()
    store.finish_turn(cid, tool_round(cid), tool_calls=1, tokens=42)
    assert dict(requests) == {"TransactWriteItems": 1}
    requests.clear()
    loaded, _ = store.load(cid, ALICE, 20)
    assert dict(requests) == {"Query": 1}
    assert [m.content for m in window] == ["question"]
    assert loaded.message_count == 4


def test_a_conversation_sits_in_the_indexes_its_state_calls_for(aws, store, transcripts):
    conv = store.create(conversation(user_id="u-1"))
    item = meta_item(aws, conv.conversation_id)
    assert item["GSI1PK"]["S"] == f"CALLER#{ALICE}"
    assert item["GSI2PK"]["S"] == "USER#u-1"
    assert item["GSI1SK"]["S"].endswith(f"#{conv.conversation_id}")
    assert item["GSI3PK"]["S"].startswith("ARCHIVE#")
    assert 0 <= int(item["GSI3PK"]["S"].removeprefix("ARCHIVE#")) < 16

    store.mark_archived(conv.conversation_id, transcripts.write(ALICE, conv.conversation_id, []))
    assert "GSI3PK" not in meta_item(aws, conv.conversation_id)
    store.soft_delete(conv.conversation_id, ALICE)
    deleted = meta_item(aws, conv.conversation_id)
    assert not {"GSI1PK", "GSI2PK"} & set(deleted)
    assert deleted["GSI3PK"]["S"].startswith("PURGE#")  # found by the archival job's purge
    assert deleted["status"]["S"] == "DELETED"
    assert int(deleted["expiresAt"]["N"]) > 0


def test_active_conversations_are_found_by_the_archive_index(aws, store):
    conv = store.create(conversation(age_seconds=3600))
    shard = meta_item(aws, conv.conversation_id)["GSI3PK"]["S"]
    found = aws[0].query(
        TableName=TABLE,
        IndexName="ByArchive",
        KeyConditionExpression="GSI3PK = :s",
        ExpressionAttributeValues={":s": {"S": shard}},
    )["Items"]
    assert conv.conversation_id in {i["PK"]["S"].removeprefix("CONV#") for i in found}


def test_contents_over_300_kb_go_to_s3_and_come_back(aws, store):
    conv = store.create(conversation())
    cid = conv.conversation_id
    big = "é" * 200_000  # 400 KB of UTF-8
    thoughts = "t" * 150_000
    sent = message(cid, big, Role.ASSISTANT, reasoning=thoughts)
    store.append(cid, ALICE, [message(cid, "small"), sent])

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

    assert store.window(cid, 5)[-1] == sent
    assert store.messages(cid, ALICE).items[-1] == sent


def test_a_turn_with_more_messages_than_one_transaction_holds(store, requests):
    conv = store.create(conversation())
    cid = conv.conversation_id
    store.start_turn(cid, ALICE, message(cid, "q"), None, LEASE)
    produced = [message(cid, f"step {i}", Role.ASSISTANT) for i in range(150)]
    requests.clear()
    store.finish_turn(cid, produced, tool_calls=0, tokens=0)
    assert requests["TransactWriteItems"] == 1
    assert requests["BatchWriteItem"] == 3  # the 51 oldest, in chunks of 25
    assert store.get(cid, ALICE).message_count == 151
    assert [m.content for m in store.window(cid, 3)] == ["step 147", "step 148", "step 149"]
    everything = store.messages(cid, ALICE, limit=100)
    rest = store.messages(cid, ALICE, limit=100, cursor=everything.next_cursor)
    assert [m.content for m in everything.items + rest.items] == ["q", *(m.content for m in produced)]


def test_a_cursor_pointing_outside_the_callers_partition_is_refused(store):
    from rag_orchestrator.conversations.store import list_scope
    from rag_orchestrator.errors import BadRequest

    store.create(conversation())
    forged = store._cursors.encode(
        {"PK": "CONV#x", "SK": "META", "GSI1PK": "CALLER#bob", "GSI1SK": "2020"},
        list_scope("ByCaller", f"CALLER#{ALICE}", None, None),
    )
    with pytest.raises(BadRequest):
        store.list_by_caller(ALICE, cursor=forged)


def test_dynamodb_unreachable_is_storage_unavailable(monkeypatch):
    from rag_orchestrator.errors import StorageUnavailable

    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    from botocore.config import Config

    quick = Config(connect_timeout=0.2, retries={"max_attempts": 1})
    dynamodb = boto3.client("dynamodb", region_name="us-east-1", config=quick)
    s3 = boto3.client("s3", region_name="us-east-1", config=quick)
    store = DynamoConversationStore(TABLE, BUCKET, dynamodb=dynamodb, s3=s3, cursor_secret=b"k" * 32)
    with pytest.raises(StorageUnavailable):
        store.get("00000000-0000-4000-8000-000000000000", ALICE)
