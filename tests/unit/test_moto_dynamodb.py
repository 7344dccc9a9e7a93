"""The local moto server's DynamoDB, made to behave as DynamoDB does where moto does not: expired items
deleted, a failed transaction rolled back from its own items, nothing kept per request."""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.core.common_models import BaseModel
from moto.dynamodb import models
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.table import Table

from devserver.moto_dynamodb import query_partitions_only, save_touched_items, start_sweeper, sweep_expired
from devserver.moto_serial import one_at_a_time

NOW = time.time()
ORIGINAL = DynamoDBBackend.transact_write_items
MOTO_QUERY = Table.query


@pytest.fixture
def dynamodb(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """moto in-process; a table with TTL on `expiresAt` and one without; the transaction patch undone after."""
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        for table in ("ttl", "plain"):
            client.create_table(
                TableName=table,
                KeySchema=[
                    {"AttributeName": "PK", "KeyType": "HASH"},
                    {"AttributeName": "SK", "KeyType": "RANGE"},
                ],
                AttributeDefinitions=[
                    {"AttributeName": "PK", "AttributeType": "S"},
                    {"AttributeName": "SK", "AttributeType": "S"},
                ],
                BillingMode="PAY_PER_REQUEST",
            )
        client.update_time_to_live(
            TableName="ttl", TimeToLiveSpecification={"Enabled": True, "AttributeName": "expiresAt"}
        )
        yield client


def put(client: Any, table: str, sk: str, **extra: dict[str, str]) -> None:
    client.put_item(TableName=table, Item={"PK": {"S": "P"}, "SK": {"S": sk}, **extra})


def keys(client: Any, table: str) -> set[str]:
    items = client.query(
        TableName=table, KeyConditionExpression="PK = :p", ExpressionAttributeValues={":p": {"S": "P"}}
    )["Items"]
    return {item["SK"]["S"] for item in items}


def test_items_whose_ttl_passed_are_deleted_as_dynamodb_deletes_them(dynamodb):
    put(dynamodb, "ttl", "expired", expiresAt={"N": str(int(NOW - 10))})
    put(dynamodb, "ttl", "later", expiresAt={"N": str(int(NOW + 600))})
    put(dynamodb, "ttl", "ancient", expiresAt={"N": str(int(NOW - 6 * 365 * 86400))})  # ignored by DynamoDB
    put(dynamodb, "ttl", "text", expiresAt={"S": str(int(NOW - 10))})  # not a Number: no TTL
    put(dynamodb, "ttl", "none")
    put(dynamodb, "plain", "expired", expiresAt={"N": str(int(NOW - 10))})  # TTL is off for this table
    assert sweep_expired(NOW) == 1
    assert keys(dynamodb, "ttl") == {"later", "ancient", "text", "none"}
    assert keys(dynamodb, "plain") == {"expired"}


def test_the_server_sweeps_under_its_request_lock(dynamodb):
    lock = threading.Lock()
    put(dynamodb, "ttl", "expired", expiresAt={"N": str(int(time.time() - 1))})
    with lock:  # a request in progress: nothing is swept meanwhile
        stop = start_sweeper(lock, seconds=0.01)
        time.sleep(0.05)
        assert keys(dynamodb, "ttl") == {"expired"}
    deadline = time.monotonic() + 5
    while keys(dynamodb, "ttl") and time.monotonic() < deadline:
        time.sleep(0.01)
    stop()
    assert keys(dynamodb, "ttl") == set()


def conditional_put(sk: str) -> dict[str, Any]:
    item = {"PK": {"S": "P"}, "SK": {"S": sk}}
    return {"Put": {"TableName": "plain", "Item": item, "ConditionExpression": "attribute_not_exists(PK)"}}


def update(sk: str, value: str) -> dict[str, Any]:
    return {
        "Update": {
            "TableName": "plain",
            "Key": {"PK": {"S": "P"}, "SK": {"S": sk}},
            "UpdateExpression": "SET v = :v",
            "ExpressionAttributeValues": {":v": {"S": value}},
        }
    }


@pytest.fixture
def touched_items_saved() -> Iterator[None]:
    undo = save_touched_items()
    yield
    undo()
    assert DynamoDBBackend.transact_write_items is ORIGINAL and models.copy is copy  # moto's own again


def test_a_failed_transaction_leaves_every_item_it_named_as_it_was(dynamodb, touched_items_saved):
    put(dynamodb, "plain", "a", v={"S": "before"})
    put(dynamodb, "plain", "gone")
    put(dynamodb, "plain", "taken")
    failing = [
        update("a", "after"),
        {"Delete": {"TableName": "plain", "Key": {"PK": {"S": "P"}, "SK": {"S": "gone"}}}},
        conditional_put("new"),
        conditional_put("taken"),  # exists: the transaction is cancelled
    ]
    with pytest.raises(dynamodb.exceptions.TransactionCanceledException):
        dynamodb.transact_write_items(TransactItems=failing)
    assert keys(dynamodb, "plain") == {"a", "gone", "taken"}
    item = dynamodb.get_item(TableName="plain", Key={"PK": {"S": "P"}, "SK": {"S": "a"}})["Item"]
    assert item["v"] == {"S": "before"}
    dynamodb.transact_write_items(TransactItems=[update("a", "after"), conditional_put("new")])
    assert keys(dynamodb, "plain") == {"a", "gone", "taken", "new"}


def test_a_query_reads_its_partition_and_answers_as_moto_does(dynamodb):
    for partition in ("P", "Q"):
        for n in range(12):
            dynamodb.put_item(
                TableName="plain", Item={"PK": {"S": partition}, "SK": {"S": f"M#{n:02}"}, "n": {"N": str(n)}}
            )
    asks = [
        {"KeyConditionExpression": "PK = :p", "ExpressionAttributeValues": {":p": {"S": "P"}}},
        {
            "KeyConditionExpression": "PK = :p AND begins_with(SK, :m)",
            "ExpressionAttributeValues": {":p": {"S": "Q"}, ":m": {"S": "M#0"}},
            "ScanIndexForward": False,
            "Limit": 4,
        },
        {"KeyConditionExpression": "PK = :p", "ExpressionAttributeValues": {":p": {"S": "none"}}},
    ]

    def answers() -> list[Any]:
        pages = []
        for ask in asks:
            page = dynamodb.query(TableName="plain", **ask)
            pages.append((page["Items"], page.get("LastEvaluatedKey")))
            if "LastEvaluatedKey" in page:  # the next page from where the first stopped
                later = dynamodb.query(TableName="plain", ExclusiveStartKey=page["LastEvaluatedKey"], **ask)
                pages.append((later["Items"], later.get("LastEvaluatedKey")))
        return pages

    moto_own = answers()
    undo = query_partitions_only()
    try:
        assert answers() == moto_own
    finally:
        undo()
    assert Table.query is MOTO_QUERY


def test_the_server_keeps_nothing_moto_tracks_for_its_dashboard():
    class Thing(BaseModel):
        pass

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        Thing()
        return [b"ok"]

    assert one_at_a_time(app, threading.Lock())({}, lambda *_: None) == [b"ok"]
    assert Thing.instances_tracked == []  # type: ignore[attr-defined]
