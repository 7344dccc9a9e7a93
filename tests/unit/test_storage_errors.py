"""DynamoDB's errors as a client sees them: invalid data is a 400, throttling and outages a 503 with
Retry-After, and DynamoDB's own message (which may quote the data) never leaves the log."""

import boto3
import pytest
from botocore.config import Config
from botocore.stub import Stubber
from fastapi import APIRouter
from fastapi.testclient import TestClient

from rag_orchestrator.api.app import create_app, mount
from rag_orchestrator.conversations.table import REFUSED, THROTTLED, ConditionFailed, Table, failure_of
from rag_orchestrator.errors import BadRequest, StorageUnavailable
from tests.fakes.moto_aws import mocked_aws

SECRET_DATA = "the customer's private note"


def stubbed_table() -> tuple[Table, Stubber]:
    client = boto3.client(
        "dynamodb",
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
        config=Config(retries={"total_max_attempts": 1}),
    )
    return Table(client, "t"), Stubber(client)


@pytest.mark.parametrize(
    ("code", "reasons", "expected"),
    [
        ("ValidationException", set(), BadRequest),
        ("TransactionCanceledException", {"None", "ValidationError"}, BadRequest),
        ("ProvisionedThroughputExceededException", set(), StorageUnavailable),
        ("ThrottlingException", set(), StorageUnavailable),
        ("RequestLimitExceeded", set(), StorageUnavailable),
        ("TransactionCanceledException", {"ThrottlingError"}, StorageUnavailable),
        ("InternalServerError", set(), StorageUnavailable),
        ("ConditionalCheckFailedException", set(), type(None)),
        ("TransactionCanceledException", {"ConditionalCheckFailed", "None"}, type(None)),
    ],
)
def test_each_dynamodb_error_code_has_one_meaning(code, reasons, expected):
    assert type(failure_of(code, reasons)) is expected


@pytest.mark.parametrize(
    ("code", "status", "message"),
    [
        ("ValidationException", 400, REFUSED),
        ("ProvisionedThroughputExceededException", 503, THROTTLED),
        ("ThrottlingException", 503, THROTTLED),
        ("RequestLimitExceeded", 503, THROTTLED),
    ],
)
def test_a_refused_call_is_our_error_without_dynamodbs_message(code, status, message):
    table, stub = stubbed_table()
    with stub:
        stub.add_client_error("get_item", code, f"rejected: {SECRET_DATA}", 400)
        with pytest.raises((BadRequest, StorageUnavailable)) as raised:
            table.call("get_item", Key={"PK": {"S": "x"}, "SK": {"S": "y"}})
    error = raised.value
    assert (error.status_code, error.message) == (status, message)
    assert SECRET_DATA not in error.public_message
    assert (error.retry_after is not None) == (status == 503)


def test_a_cancelled_transaction_with_only_conditions_is_the_stores_to_read():
    table, stub = stubbed_table()
    with stub:
        stub.add_client_error("transact_write_items", "TransactionCanceledException", "cancelled", 400)
        with pytest.raises(ConditionFailed):
            table.transact([{"ConditionCheck": {"Key": {"PK": {"S": "x"}}, "ConditionExpression": "a = b"}}])


def test_invalid_data_on_a_real_dynamodb_api_is_a_bad_request(monkeypatch):
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mocked_aws("t", "bucket-test") as (dynamodb, _):
        table = Table(dynamodb, "t")
        # An empty key attribute: DynamoDB (and moto) answer ValidationException.
        with pytest.raises(BadRequest) as raised:
            table.call("put_item", Item={"PK": {"S": ""}, "SK": {"S": "META"}, "note": {"S": SECRET_DATA}})
    assert raised.value.message == REFUSED and SECRET_DATA not in raised.value.public_message


router = APIRouter()


@router.get("/throttled")
def throttled() -> dict:
    raise StorageUnavailable(THROTTLED)


@router.get("/invalid")
def invalid() -> dict:
    raise BadRequest(REFUSED)


def test_the_app_answers_503_with_retry_after_and_400_without(monkeypatch):
    app = create_app(["health", "conversations"])
    mount(app, router)
    client = TestClient(app)
    response = client.get("/throttled")
    assert response.status_code == 503 and response.headers["retry-after"] == "5"
    assert response.json()["message"] == f"{THROTTLED}; try again later"
    response = client.get("/invalid")
    assert response.status_code == 400 and "retry-after" not in response.headers
    assert response.json()["message"] == REFUSED
