"""Create the table and buckets on the local moto server from template.yaml (one source of truth)."""

from __future__ import annotations

from typing import Any

from devserver.cfn_yaml import load_template
from devserver.stack import ROOT

TABLE_RESOURCE = "ConversationsTable"


def table_definition(template_path=ROOT / "template.yaml") -> dict[str, Any]:
    """The create_table arguments of the conversations table, as template.yaml declares it."""
    props = load_template(template_path)["Resources"][TABLE_RESOURCE]["Properties"]
    definition = {
        "AttributeDefinitions": props["AttributeDefinitions"],
        "KeySchema": props["KeySchema"],
        "BillingMode": props.get("BillingMode", "PAY_PER_REQUEST"),
    }
    if props.get("GlobalSecondaryIndexes"):
        definition["GlobalSecondaryIndexes"] = [
            {key: index[key] for key in ("IndexName", "KeySchema", "Projection")}
            for index in props["GlobalSecondaryIndexes"]
        ]
    ttl = props.get("TimeToLiveSpecification")
    definition["_ttl_attribute"] = ttl["AttributeName"] if ttl and ttl.get("Enabled") else None
    definition["_stream_view_type"] = (props.get("StreamSpecification") or {}).get("StreamViewType")
    return definition


def create_resources(
    table: str, buckets: list[str], session: Any | None = None, *, stream: bool = False
) -> None:
    """Create the table (with its TTL) and the buckets unless they exist already. `stream`: with the
    template's stream too (a test of the lifecycle hand-over; moto keeps every record, so not by default)."""
    import boto3

    session = session or boto3.session.Session()
    dynamodb = session.client("dynamodb")
    definition = table_definition()
    ttl_attribute = definition.pop("_ttl_attribute")
    stream_spec = definition.pop("_stream_view_type")
    if stream and stream_spec:
        definition["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": stream_spec}
    if table not in dynamodb.list_tables()["TableNames"]:
        dynamodb.create_table(TableName=table, **definition)
        dynamodb.get_waiter("table_exists").wait(TableName=table)
        if ttl_attribute:
            dynamodb.update_time_to_live(
                TableName=table, TimeToLiveSpecification={"Enabled": True, "AttributeName": ttl_attribute}
            )
    s3 = session.client("s3")
    existing = {b["Name"] for b in s3.list_buckets().get("Buckets", [])}
    for bucket in buckets:
        if bucket and bucket not in existing:
            s3.create_bucket(Bucket=bucket)
