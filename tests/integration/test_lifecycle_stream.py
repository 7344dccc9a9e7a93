"""The hand-over of erasures and exports in AWS: the API inserts a RUN# item under the job, the table's
stream carries the insert, the template's filter lets it through, and LifecycleFunction's handler (loaded
by path, as `make invoke` does) runs the job. On the moto server, with the table's stream as the
template declares it, the records read back through DynamoDB Streams' own API."""

from __future__ import annotations

import json
import uuid
from typing import Any

import boto3
import httpx
import pytest
from fastapi.testclient import TestClient

from devserver.cfn_yaml import load_template
from devserver.invoke import LambdaContext, load_handler_module
from devserver.resources import create_resources
from devserver.stack import ROOT
from rag_orchestrator.api.deps import process_aws
from rag_orchestrator.config import load_settings
from rag_orchestrator.conversations.cursors import actor_key
from rag_orchestrator.conversations.table import Table
from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.lifecycle.dispatch import StreamDispatcher
from rag_orchestrator.lifecycle.jobs import ErasureJobs
from rag_orchestrator.lifecycle.runner import exports
from rag_orchestrator.lifecycle.service import Lifecycle
from tests.fakes.llm_script import text_reply
from tests.integration.test_archive_function import thinking_chat

pytestmark = pytest.mark.integration

BASE = "/api/v1/chat/conversations"


@pytest.fixture
def streamed(aws_stack, chroma_url, fake_llm, monkeypatch) -> dict[str, Any]:
    """A table of the test's own with the template's stream, the app chatting into it."""
    suffix = uuid.uuid4().hex[:8]
    names = {"CONVERSATIONS_TABLE": f"stream-{suffix}", "TRANSCRIPTS_BUCKET": f"stream-transcripts-{suffix}"}
    create_resources(names["CONVERSATIONS_TABLE"], [names["TRANSCRIPTS_BUCKET"]], stream=True)
    for key, value in names.items():
        monkeypatch.setenv(key, value)
    chat = thinking_chat(fake_llm, monkeypatch)
    dynamodb = boto3.client("dynamodb", endpoint_url=aws_stack["endpoint"])
    return names | {"chat": chat, "dynamodb": dynamodb, "endpoint": aws_stack["endpoint"]}


def lifecycle_in_lambda(streamed: dict[str, Any]) -> Lifecycle:
    """The routes' side as create_lifecycle builds it inside Lambda: the stream dispatcher."""
    settings = load_settings()
    table = Table(streamed["dynamodb"], streamed["CONVERSATIONS_TABLE"])
    return Lifecycle(
        ErasureJobs(table), exports(settings, process_aws()), StreamDispatcher(table), actor_key(settings)
    )


def stream_records(streamed: dict[str, Any]) -> list[dict[str, Any]]:
    """Every record on the table's stream so far, as Lambda's event source reads them."""
    streams = boto3.client("dynamodbstreams", endpoint_url=streamed["endpoint"])
    arn = streamed["dynamodb"].describe_table(TableName=streamed["CONVERSATIONS_TABLE"])["Table"][
        "LatestStreamArn"
    ]
    records = []
    for shard in streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
        iterator = streams.get_shard_iterator(
            StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        records += streams.get_records(ShardIterator=iterator)["Records"]
    return records


def matches(pattern: Any, value: Any) -> bool:
    """Lambda's event filtering for the pattern forms the template uses: nested objects, lists of exact
    values and `{"prefix": ...}`."""
    if isinstance(pattern, dict):
        return isinstance(value, dict) and all(
            key in value and matches(inner, value[key]) for key, inner in pattern.items()
        )
    return any(
        (isinstance(option, dict) and isinstance(value, str) and value.startswith(option["prefix"]))
        or option == value
        for option in pattern
    )


def delivered(streamed: dict[str, Any]) -> list[dict[str, Any]]:
    """The records the template's filter lets through to LifecycleFunction."""
    function = load_template(ROOT / "template.yaml")["Resources"]["LifecycleFunction"]["Properties"]
    (event,) = function["Events"].values()
    patterns = [json.loads(f["Pattern"]) for f in event["Properties"]["FilterCriteria"]["Filters"]]
    return [r for r in stream_records(streamed) if any(matches(p, r) for p in patterns)]


def invoke(records: list[dict[str, Any]]) -> dict[str, Any]:
    module = load_handler_module("lifecycle")  # imported anew: settings as the test set them
    return module.handler({"Records": records}, LambdaContext(function_name="rag-orchestrator-lifecycle"))


def test_an_erasure_reaches_lifecycle_function_through_the_tables_stream(streamed, fake_llm):
    chat: TestClient = streamed["chat"]
    alice = {"X-Caller-Id": f"user-{uuid.uuid4().hex[:8]}"}
    cid = chat.post(BASE, json={}, headers=alice).json()["conversationId"]
    fake_llm.script(text_reply("The port is 8000 [source:guide#0]."))
    assert chat.post(f"{BASE}/{cid}/messages", json={"message": "port?"}, headers=alice).status_code == 200

    lifecycle = lifecycle_in_lambda(streamed)
    started = lifecycle.erase(alice["X-Caller-Id"], Caller(alice["X-Caller-Id"], ("user",)))
    assert lifecycle.erasure(started.erasure_id)["status"] == "RUNNING"  # nothing ran in the request

    records = delivered(streamed)
    assert len(records) == 1  # the conversation's own writes are filtered out; only the hand-over
    (job,) = invoke(records)["jobs"]
    assert (job["erasureId"], job["status"]) == (started.erasure_id, "COMPLETED")
    assert job["counts"]["conversations"] == 1 and "callerId" not in job
    assert chat.get(f"{BASE}/{cid}", headers=alice).status_code == 404


def test_an_export_reaches_lifecycle_function_through_the_tables_stream(streamed, fake_llm):
    chat: TestClient = streamed["chat"]
    caller = f"user-{uuid.uuid4().hex[:8]}"
    cid = chat.post(BASE, json={"title": "Ports"}, headers={"X-Caller-Id": caller}).json()["conversationId"]

    export_id = lifecycle_in_lambda(streamed).export(caller)
    records = delivered(streamed)
    assert [r["dynamodb"]["Keys"]["PK"]["S"] for r in records] == [f"EXPORT#{export_id}"]
    assert invoke(records)["jobs"] == [{"exportId": export_id}]
    status = chat.get(f"/api/v1/me/exports/{export_id}", headers={"X-Caller-Id": caller}).json()
    assert status["status"] == "READY"
    document = httpx.get(status["url"]).json()  # the presigned URL, as the app would follow it
    assert [c["conversationId"] for c in document["conversations"]] == [cid]
