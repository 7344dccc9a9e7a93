"""DynamoDB and S3 on moto in-process, the table taken from template.yaml, Scan refused."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
from moto import mock_aws
from moto.core.model_instances import reset_model_data

from devserver.moto_dynamodb import lighten
from devserver.resources import table_definition
from rag_orchestrator import aws


def _refuse_scan(**_: Any) -> None:
    raise AssertionError("Scan is never allowed on the conversations table")


@contextmanager
def mocked_aws(table: str, bucket: str, *, versioned: bool = False) -> Iterator[tuple[Any, Any]]:
    """(dynamodb, s3) clients; `versioned` turns on bucket versioning as deployed. Transactions and
    queries as on the moto server (devserver/moto_dynamodb.py: no copy or sort of the whole table)."""
    undo = lighten()
    # moto's in-process mock answers botocore alone: AwsClients makes boto3's clients meanwhile. The JSON
    # clients without boto3 (aws_json.py, aws_bedrock.py) speak HTTP, and are tested against the moto
    # server and scripted servers (tests/integration).
    without_boto3, aws.WITHOUT_BOTO3 = aws.WITHOUT_BOTO3, frozenset()
    try:
        with mock_aws():
            dynamodb = boto3.client("dynamodb", region_name="us-east-1")
            s3 = boto3.client("s3", region_name="us-east-1")
            provision(dynamodb, s3, table, bucket, versioned=versioned)
            yield dynamodb, s3
    finally:
        aws.WITHOUT_BOTO3 = without_boto3
        undo()
        reset_model_data()  # what moto kept of every object it made, for its dashboard


def provision(dynamodb: Any, s3: Any, table: str, bucket: str, *, versioned: bool = False) -> None:
    """The table (template.yaml's definition) and the bucket, through these clients; Scan refused."""
    definition = table_definition()
    definition.pop("_ttl_attribute"), definition.pop("_stream_view_type")
    dynamodb.create_table(TableName=table, **definition)
    s3.create_bucket(Bucket=bucket)
    if versioned:
        s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    dynamodb.meta.events.register("before-call.dynamodb.Scan", _refuse_scan)
