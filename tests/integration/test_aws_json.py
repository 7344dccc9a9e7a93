"""The JSON-protocol client (aws_json.py) against boto3's, on the moto server: the same calls give the
same results and the same errors — items with every kind of attribute, queries, a refused condition
with the old item, a cancelled transaction's reasons, a validation error, SSM parameters and Secrets
Manager secrets — and AWS out of reach or failing gives botocore's errors after botocore's retries.
(Every store test of the suite runs on this client too: the environment holds credentials.)"""

from __future__ import annotations

import http.server
import json
import threading
import uuid
from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from typing import Any

import boto3
import pytest
from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError

from rag_orchestrator import aws_wire
from rag_orchestrator.attribute_values import serialize
from rag_orchestrator.aws_json import SERVICES, JsonClient
from rag_orchestrator.aws_wire import environment

pytestmark = pytest.mark.integration


@pytest.fixture
def both(aws_stack) -> Iterator[dict[str, tuple[Any, JsonClient]]]:
    found = environment()
    assert found is not None  # the suite's environment holds credentials and a region
    pairs = {
        name: (boto3.client(name, endpoint_url=aws_stack["endpoint"]), JsonClient(SERVICES[name], *found))
        for name in SERVICES
    }
    yield pairs
    for _, ours in pairs.values():
        ours.close()


def without_metadata(response: dict[str, Any]) -> dict[str, Any]:
    """The response without its metadata, a timestamp as epoch seconds: boto3 makes a datetime of one,
    ours leaves it as the JSON sends it (no service models here to say which fields are times)."""

    def plain(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: plain(inner) for key, inner in value.items() if key != "ResponseMetadata"}
        if isinstance(value, list):
            return [plain(inner) for inner in value]
        return value.timestamp() if isinstance(value, datetime) else value

    return plain(response)


def same(pair, operation: str, **params: Any) -> dict[str, Any]:
    theirs, ours = (getattr(client, operation)(**params) for client in pair)
    assert without_metadata(ours) == without_metadata(theirs)
    assert ours["ResponseMetadata"]["HTTPStatusCode"] == 200
    return ours


def same_error(pair, operation: str, **params: Any) -> ClientError:
    errors = []
    for client in pair:
        with pytest.raises(ClientError) as caught:
            getattr(client, operation)(**params)
        errors.append(caught.value)
    theirs, ours = errors
    assert ours.response["Error"] == theirs.response["Error"]
    assert str(ours) == str(theirs)
    for field in ("Item", "CancellationReasons"):
        assert ours.response.get(field) == theirs.response.get(field)
    return ours


def item(pk: str, **values: Any) -> dict[str, Any]:
    return {"PK": {"S": pk}, "SK": {"S": "META"}, **{k: serialize(v) for k, v in values.items()}}


def test_items_read_and_written_are_boto3s(both, aws_stack):
    pair, table = both["dynamodb"], aws_stack["CONVERSATIONS_TABLE"]
    pk = f"CONV#{uuid.uuid4()}"
    values = {
        "text": "h\u00e9 \u2603",
        "count": Decimal("12.5"),
        "blob": b"\x00\xff",
        "blobs": {b"a", b"b"},
        "tags": {"x", "y"},
        "flags": [True, None, {"n": 3}],
    }
    same(pair, "put_item", TableName=table, Item=item(pk, **values))
    read = same(
        pair, "get_item", TableName=table, Key={"PK": {"S": pk}, "SK": {"S": "META"}}, ConsistentRead=True
    )
    assert read["Item"]["blob"] == {"B": b"\x00\xff"}
    same(
        pair,
        "query",
        TableName=table,
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": pk}},
    )


def test_a_refused_condition_carries_the_old_item_as_boto3s(both, aws_stack):
    pair, table = both["dynamodb"], aws_stack["CONVERSATIONS_TABLE"]
    pk = f"CONV#{uuid.uuid4()}"
    pair[0].put_item(TableName=table, Item=item(pk, status="ACTIVE"))
    error = same_error(
        pair,
        "put_item",
        TableName=table,
        Item=item(pk, status="DELETED"),
        ConditionExpression="attribute_not_exists(PK)",
        ReturnValuesOnConditionCheckFailure="ALL_OLD",
    )
    assert error.response["Error"]["Code"] == "ConditionalCheckFailedException"
    assert error.response["Item"]["status"] == {"S": "ACTIVE"}


def test_a_cancelled_transaction_carries_its_reasons_as_boto3s(both, aws_stack):
    pair, table = both["dynamodb"], aws_stack["CONVERSATIONS_TABLE"]
    pk = f"CONV#{uuid.uuid4()}"
    pair[0].put_item(TableName=table, Item=item(pk))
    error = same_error(
        pair,
        "transact_write_items",
        TransactItems=[
            {"Put": {"TableName": table, "Item": item(f"CONV#{uuid.uuid4()}")}},
            {
                "Put": {
                    "TableName": table,
                    "Item": item(pk),
                    "ConditionExpression": "attribute_not_exists(PK)",
                }
            },
        ],
    )
    assert error.response["Error"]["Code"] == "TransactionCanceledException"
    assert [r["Code"] for r in error.response["CancellationReasons"]] == ["None", "ConditionalCheckFailed"]


def test_a_validation_error_is_boto3s(both, aws_stack):
    error = same_error(
        both["dynamodb"], "get_item", TableName=aws_stack["CONVERSATIONS_TABLE"], Key={"PK": {"N": "1"}}
    )
    assert error.response["Error"]["Code"] == "ValidationException"


def test_ssm_parameters_and_secrets_are_boto3s(both):
    name = f"/rag/test-{uuid.uuid4().hex[:8]}"
    both["ssm"][0].put_parameter(Name=name, Value="sk-1", Type="SecureString")
    read = same(both["ssm"], "get_parameter", Name=name, WithDecryption=True)
    assert read["Parameter"]["Value"] == "sk-1"
    assert same_error(both["ssm"], "get_parameter", Name=name + "-missing").response["Error"]["Code"] == (
        "ParameterNotFound"
    )
    secret = f"rag/test-{uuid.uuid4().hex[:8]}"
    both["secretsmanager"][0].create_secret(Name=secret, SecretString=json.dumps({"k": "v"}))
    assert json.loads(same(both["secretsmanager"], "get_secret_value", SecretId=secret)["SecretString"]) == {
        "k": "v"
    }
    missing = same_error(both["secretsmanager"], "get_secret_value", SecretId=secret + "-missing")
    assert missing.response["Error"]["Code"] == "ResourceNotFoundException"


def test_a_call_emits_botocores_events_to_what_observes_it(both, aws_stack):
    """Handlers registered on `meta.events` (a name, or narrowed to a service or operation) are called
    as boto3's client calls them: each event once per call (before-send once per attempt), with the
    operation's name and the call's parameters and result."""
    events = ("provide-client-params.dynamodb", "before-call.dynamodb.GetItem", "before-send", "after-call")
    seen = []
    for client in both["dynamodb"]:
        heard: list[tuple[str, Any, Any]] = []
        for event in events:
            client.meta.events.register(
                event,
                lambda event_name, model=None, params=None, parsed=None, heard=heard, **_: heard.append(
                    (event_name, getattr(model, "name", None), sorted(params or parsed or ()))
                ),
            )
        key = {"PK": {"S": f"CONV#{uuid.uuid4()}"}, "SK": {"S": "META"}}
        client.get_item(TableName=aws_stack["CONVERSATIONS_TABLE"], Key=key)
        seen.append(heard)
    theirs, ours = seen
    assert ours == theirs
    assert [name for name, _, _ in ours] == [
        "provide-client-params.dynamodb.GetItem",
        "before-call.dynamodb.GetItem",
        "before-send.dynamodb.GetItem",
        "after-call.dynamodb.GetItem",
    ]
    assert both["secretsmanager"][1].meta.service_model.service_name == "secretsmanager"


def test_nothing_listening_is_botocores_connection_error(monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    found = environment()
    assert found is not None
    client = JsonClient(SERVICES["dynamodb"], *found, max_attempts=1)
    with pytest.raises(EndpointConnectionError) as caught:
        client.list_tables()
    assert isinstance(caught.value, BotoCoreError) and "127.0.0.1:9" in str(caught.value)


class Scripted(http.server.BaseHTTPRequestHandler):
    """Answers each POST with the next (status, body) of the server's script; keeps what it received."""

    def do_POST(self) -> None:
        server: Any = self.server
        server.received.append((self.headers["X-Amz-Target"], self.headers["Authorization"]))
        self.rfile.read(int(self.headers["Content-Length"]))
        status, body = server.script.pop(0)
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/x-amz-json-1.0")
        self.send_header("x-amzn-RequestId", f"req-{len(server.received)}")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def scripted(monkeypatch) -> Iterator[tuple[Any, JsonClient, list[float]]]:
    server: Any = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Scripted)
    server.received, server.script = [], []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", f"http://127.0.0.1:{server.server_address[1]}")
    pauses: list[float] = []
    monkeypatch.setattr(aws_wire.time, "sleep", pauses.append)  # the pauses, not the waiting
    found = environment()
    assert found is not None
    client = JsonClient(SERVICES["dynamodb"], *found, max_attempts=3)
    yield server, client, pauses
    client.close()
    server.shutdown()


THROTTLED = {
    "__type": "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
    "message": "slow",
}


def test_throttling_and_5xx_are_retried_as_botocore_does(scripted):
    server, client, pauses = scripted
    server.script = [(400, THROTTLED), (500, {"__type": "InternalServerError"}), (200, {"TableNames": []})]
    response = client.list_tables()
    assert response["TableNames"] == [] and response["ResponseMetadata"]["RetryAttempts"] == 2
    assert [target for target, _ in server.received] == ["DynamoDB_20120810.ListTables"] * 3
    assert all(auth.startswith("AWS4-HMAC-SHA256 Credential=") for _, auth in server.received)
    assert len(pauses) == 2 and 0 <= pauses[0] <= 1 and 0 <= pauses[1] <= 2  # random, up to 2^n seconds


def test_a_refusal_is_not_retried_and_the_last_throttle_is_raised(scripted):
    server, client, pauses = scripted
    server.script = [
        (400, {"__type": "com.amazonaws.dynamodb.v20120810#ValidationException", "message": "no"})
    ]
    with pytest.raises(ClientError) as refused:
        client.list_tables()
    assert (
        refused.value.response["Error"] == {"Code": "ValidationException", "Message": "no"} and pauses == []
    )
    server.script = [(400, THROTTLED)] * 3
    with pytest.raises(ClientError) as throttled:
        client.list_tables()
    assert throttled.value.response["Error"]["Code"] == "ProvisionedThroughputExceededException"
    assert throttled.value.response["ResponseMetadata"]["RetryAttempts"] == 2
