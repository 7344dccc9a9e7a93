"""S3's GetObject and PutObject without boto3 (aws_s3.py) against boto3's S3 client: on a scripted S3
(tests/fakes/fake_s3.py) both send the same request, ours signed as botocore's S3 signer signs it, and
both read the same objects and the same errors; throttling and S3's transient errors are retried, a
refusal is not; a bucket of another region is asked again there; buckets are addressed as botocore
addresses them; on the moto server each reads what the other wrote; and a function whose tool catalogue
and tool index are in S3 starts without importing boto3."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials as BotoCredentials
from botocore.exceptions import ClientError

from rag_orchestrator.aws import AwsClients
from rag_orchestrator.aws_s3 import S3Objects
from rag_orchestrator.aws_wire import environment
from tests.fakes.client_pair import client_pair
from tests.fakes.fake_s3 import FakeS3, fake_s3

pytestmark = pytest.mark.integration

BUCKET = "catalogues"
KEYS = ("config/tools.yaml", "a b/caf\u00e9~+x.json", "odd/!'()*,;=@&$?#[]%25 \u2603.yaml")


@pytest.fixture
def scripted(monkeypatch) -> Iterator[tuple[FakeS3, S3Objects, Any, list[float]]]:
    """The server, ours and boto3's clients on it (three attempts each), and ours's pauses."""
    with (
        fake_s3() as server,
        client_pair(monkeypatch, server.url, "S3", S3Objects, "s3", s3={"addressing_style": "path"}) as (
            ours,
            theirs,
            pauses,
        ),
    ):
        yield server, ours, theirs, pauses


def botocore_signature(method: str, path: str, headers: dict[str, str], body: bytes, url: str) -> str:
    """The Authorization botocore's S3 signer gives the request as received, at its own X-Amz-Date."""
    found = environment()
    assert found is not None
    credentials, region = found
    signed = {k: v for k, v in headers.items() if k in headers["authorization"].split("SignedHeaders=")[1]}
    request = AWSRequest(method=method, url=url + path, data=body, headers=signed)
    auth = S3SigV4Auth(
        BotoCredentials(credentials.access_key, credentials.secret_key, credentials.token), "s3", region
    )
    request.context["timestamp"] = headers["x-amz-date"]
    canonical = auth.canonical_request(request)
    signature = auth.signature(auth.string_to_sign(request, canonical), request)
    return f"Signature={signature}"


def test_the_requests_are_boto3s_and_signed_as_botocore_signs_them(scripted):
    server, ours, theirs, _ = scripted
    for key in KEYS:
        for client in (theirs, ours):
            client.put_object(Bucket=BUCKET, Key=key, Body=b"tools: []\n", ContentType="application/yaml")
        (_, their_path, their_headers, their_body), (method, path, headers, body) = server.received[-2:]
        assert (method, path, body) == ("PUT", their_path, their_body)
        for name in ("content-type", "host", "x-amz-security-token", "content-length"):
            assert headers.get(name) == their_headers.get(name), name
        assert headers["x-amz-content-sha256"] == their_headers["x-amz-content-sha256"]
        assert headers["authorization"].endswith(botocore_signature(method, path, headers, body, server.url))

        got = [client.get_object(Bucket=BUCKET, Key=key) for client in (theirs, ours)]
        (_, their_path, their_headers, _), (method, path, headers, body) = server.received[-2:]
        assert (method, path, body) == ("GET", their_path, b"")
        assert headers["x-amz-content-sha256"] == their_headers["x-amz-content-sha256"]
        assert headers["authorization"].endswith(botocore_signature(method, path, headers, body, server.url))
        assert [answer["Body"].read() for answer in got] == [b"tools: []\n"] * 2
        for field in ("ContentType", "ContentLength", "ETag"):
            assert got[1][field] == got[0][field], field
        assert got[1]["ResponseMetadata"]["RequestId"] == f"req-{len(server.received)}"
        assert got[1]["ResponseMetadata"]["HostId"] == f"host-req-{len(server.received)}"
    escaped = {path for method, path, _, _ in server.received if method == "GET"}  # once, as boto3's
    assert "/catalogues/a%20b/caf%C3%A9~%2Bx.json" in escaped
    assert "/catalogues/odd/%21%27%28%29%2A%2C%3B%3D%40%26%24%3F%23%5B%5D%2525%20%E2%98%83.yaml" in escaped


def test_errors_are_botocores_and_only_transient_ones_are_retried(scripted):
    server, ours, theirs, pauses = scripted
    errors = []
    for client in (theirs, ours):
        with pytest.raises(ClientError) as missing:
            client.get_object(Bucket=BUCKET, Key="nothing-here.yaml")
        errors.append(missing.value)
    assert errors[1].response["Error"] == errors[0].response["Error"]
    assert errors[1].response["Error"]["Code"] == "NoSuchKey" and str(errors[1]) == str(errors[0])
    metadata = [error.response["ResponseMetadata"] for error in errors]
    assert [(m["RequestId"], m["HostId"]) for m in metadata] == [
        ("req-1", "host-req-1"),
        ("req-2", "host-req-2"),
    ]
    assert pauses == []  # not retried

    ours.put_object(Bucket=BUCKET, Key="k.json", Body="{}")
    for transient in ((503, "SlowDown", {}), (400, "RequestTimeout", {}), (500, "InternalError", {})):
        server.script, sent = [transient], len(server.received)
        assert ours.get_object(Bucket=BUCKET, Key="k.json")["Body"].read() == b"{}"
        assert len(server.received) == sent + 2, transient
    assert len(pauses) == 3

    for client in (theirs, ours):
        server.script, sent = [(403, "AccessDenied", {})], len(server.received)
        with pytest.raises(ClientError) as denied:
            client.get_object(Bucket=BUCKET, Key="k.json")
        assert denied.value.response["Error"]["Code"] == "AccessDenied" and len(server.received) == sent + 1

    server.script = [(503, "SlowDown", {})] * 3
    with pytest.raises(ClientError) as throttled:
        ours.put_object(Bucket=BUCKET, Key="k.json", Body=b"x")
    assert throttled.value.response["ResponseMetadata"]["RetryAttempts"] == 2 and server.script == []


def test_a_bucket_of_another_region_is_asked_again_there_and_remembered(scripted):
    server, ours, _, _ = scripted
    ours.put_object(Bucket=BUCKET, Key="k.json", Body=b"{}")
    moved = {"x-amz-bucket-region": "eu-central-1"}
    server.script, sent = [(301, "PermanentRedirect", moved)], len(server.received)
    assert ours.get_object(Bucket=BUCKET, Key="k.json")["Body"].read() == b"{}"
    scopes = [headers["authorization"].split("/")[2] for _, _, headers, _ in server.received[sent:]]
    assert scopes == [ours.region, "eu-central-1"]
    ours.get_object(Bucket=BUCKET, Key="k.json")  # straight to its region now
    assert server.received[-1][2]["authorization"].split("/")[2] == "eu-central-1"
    server.script = [(301, "PermanentRedirect", {"x-amz-bucket-region": "ap-south-1"})] * 2
    with pytest.raises(ClientError, match="PermanentRedirect"):  # asked again once, not forever
        ours.get_object(Bucket=BUCKET, Key="k.json")
    # Signed for the wrong region: S3 names the right one in the error's document alone.
    ours.put_object(Bucket="another", Key="k.json", Body=b"[]")
    server.script, sent = (
        [(400, "AuthorizationHeaderMalformed", {"Region": "sa-east-1"})],
        len(server.received),
    )
    assert ours.get_object(Bucket="another", Key="k.json")["Body"].read() == b"[]"
    scopes = [headers["authorization"].split("/")[2] for _, _, headers, _ in server.received[sent:]]
    assert scopes == [ours.region, "sa-east-1"]


@pytest.mark.parametrize("region", ["us-east-1", "eu-west-1", "cn-north-1"])
def test_buckets_are_addressed_as_botocore_addresses_them(monkeypatch, region):
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    found = environment()
    assert found is not None
    ours = S3Objects(found[0], region)
    theirs = boto3.session.Session().client("s3", region_name=region)
    urls: list[str] = []

    def stop(request: Any, **_: Any) -> None:
        urls.append(request.url)
        raise KeyboardInterrupt  # nothing is sent

    theirs.meta.events.register("before-send", stop)
    for bucket in ("my-bucket", "a.b.c", "ab", "Upper", "my--b", "x" * 63, "x" * 64):
        with pytest.raises(KeyboardInterrupt):
            theirs.get_object(Bucket=bucket, Key=KEYS[1])
        assert "".join(ours.address(bucket, KEYS[1], region)) == urls[-1]


def test_on_the_moto_server_each_reads_what_the_other_wrote(aws_stack):
    clients = AwsClients()
    ours, theirs = clients.objects(), clients.client("s3")
    assert isinstance(ours, S3Objects) and not isinstance(theirs, S3Objects)
    bucket, key = aws_stack["DOCUMENTS_BUCKET"], f"config/{uuid.uuid4().hex}/t\u00e9st tools.yaml"
    ours.put_object(Bucket=bucket, Key=key, Body="tools: []\n", ContentType="application/yaml")
    read = theirs.get_object(Bucket=bucket, Key=key)
    assert read["Body"].read() == b"tools: []\n" and read["ContentType"] == "application/yaml"
    theirs.put_object(Bucket=bucket, Key=key + ".json", Body=b"{}")
    assert ours.get_object(Bucket=bucket, Key=key + ".json")["Body"].read() == b"{}"
    with pytest.raises(ClientError) as missing:
        ours.get_object(Bucket=bucket, Key=key + ".missing")
    assert missing.value.response["Error"]["Code"] == "NoSuchKey"


STARTS = """
import asyncio, json, sys
from rag_orchestrator.api.app import STREAM_ROUTERS, create_app
app = create_app(STREAM_ROUTERS)
toolbox = app.state.services.toolbox
offered = asyncio.run(toolbox.selector.select("Where is my order?", None, ("user",)))
heavy = sorted(m for m in sys.modules if m.split(".")[0] == "boto3" or m == "botocore.client")
print(json.dumps([sorted(offered), heavy]))
"""


def test_a_function_with_its_catalogue_and_tool_index_in_s3_starts_without_boto3(aws_stack):
    """TOOL_CATALOG_PATH in S3 and TOOL_INDEX_CACHE on: the catalogue's read, and the index cache's miss
    and write, go through aws_s3.py; boto3 is not imported (docs/performance.md)."""
    from rag_orchestrator.tools.index_cache import PREFIX

    s3, bucket, cache = boto3.client("s3"), aws_stack["DOCUMENTS_BUCKET"], f"index-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=cache)  # of its own: other tests count the index objects of theirs
    key, tool = f"config/{uuid.uuid4().hex}.json", f"order_status_{uuid.uuid4().hex[:8]}"
    catalog = {
        "tools": [
            {
                "name": tool,
                "description": f"Look up where an order is ({tool})",
                "inputSchema": {
                    "type": "object",
                    "properties": {"orderId": {"type": "string"}},
                    "required": ["orderId"],
                },
                "http": {"method": "GET", "url": "https://orders.example.com/orders/{orderId}"},
            }
        ]
    }
    s3.put_object(Bucket=bucket, Key=key, Body=json.dumps(catalog).encode())
    environ = os.environ | {
        "PYTHONPATH": os.pathsep.join(sys.path),
        "TOOL_CATALOG_PATH": f"s3://{bucket}/{key}",
        "TOOL_INDEX_CACHE": "true",
        "TRANSCRIPTS_BUCKET": cache,
    }
    done = subprocess.run([sys.executable, "-c", STARTS], capture_output=True, text=True, env=environ)
    assert done.returncode == 0, done.stderr[-3000:]
    offered, heavy = json.loads(done.stdout.strip().splitlines()[-1])
    assert tool in offered and heavy == []
    written = s3.list_objects_v2(Bucket=cache, Prefix=PREFIX)["Contents"]
    assert len(written) == 1  # the index, embedded once and written for the next cold start
