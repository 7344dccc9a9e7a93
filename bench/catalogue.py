"""A tool catalogue at a cold start: what a function pays to read and check tests/data/tool_catalog_30.yaml
(30 tools) from a file and from S3 (a scripted S3 on loopback, tests/fakes/fake_s3.py), as before and now.

Before: the S3 object through boto3's S3 client, the YAML through pyyaml's pure-Python loader, every
input schema through jsonschema's `check_schema`. Now: aws_s3.py's client, libyaml's loader
(tools/catalog_source.py), the quick check of plain schemas (tools/schema_check.py). The "before"
child undoes the three in itself: the read given to boto3 (`AwsClients` did until now), pyyaml's
C loader hidden, the quick check answering "ask jsonschema".

1. A cold start's catalogue, in fresh processes (median of 5, CPU): from the settings loaded to the
   catalogue read, parsed and validated (`load_catalog`, as a function's start calls it), both ways,
   from a file and from S3.
2. A warm GetObject's client CPU, boto3's and aws_s3.py's, alternating in this process on one server.
"""

from __future__ import annotations

import os
import statistics
from unittest import mock

from bench.alternation import in_process
from bench.remote_embedders import CREDENTIALS  # the fakes' credentials, as Lambda's environment holds some
from bench.report import ROOT, Section, fresh_output
from tests.fakes.fake_s3 import fake_s3

BUCKET, KEY = "bench-config", "tools/catalogue.yaml"
CATALOGUE = ROOT / "tests" / "data" / "tool_catalog_30.yaml"
START = """
import sys, time
import httpx, yaml, rag_orchestrator.config, rag_orchestrator.aws_json  # what a start has loaded by then
from rag_orchestrator import aws
from rag_orchestrator.config import load_settings
from rag_orchestrator.tools import catalog
if sys.argv[1] == "before":
    aws.WITHOUT_BOTO3 = aws.WITHOUT_BOTO3 - {aws.OBJECTS}  # the catalogue's read to boto3
    del yaml.CSafeLoader  # the pure-Python loader
    catalog.plainly_valid = lambda schema: False  # every schema to jsonschema
settings = load_settings(conversation_storage="memory", tool_catalog_path=sys.argv[2])
started = time.process_time()
loaded = catalog.load_catalog(settings, aws=aws.AwsClients())
print(len(loaded.tools), time.process_time() - started)
"""


def _start(url: str, era: str, where: str) -> float:
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT / "layers" / "core"),
        "AUTH_MODE": "dev",
        "AWS_ENDPOINT_URL_S3": url,
        "TOOL_API_URL": "http://127.0.0.1:9",  # the catalogue's ${TOOL_API_URL} and its token
        "TOOL_API_TOKEN": "bench",
        **CREDENTIALS,
    }
    source = str(CATALOGUE) if where == "file" else f"s3://{BUCKET}/{KEY}"
    printed = fresh_output(START, era, source, env=env, what=f"the catalogue's read ({era}, {where})")
    tools, seconds = printed[-2:]
    assert tools == "30", printed
    return float(seconds) * 1000


def run(quick: bool = False) -> Section:
    section = Section("catalogue", packages=["boto3", "botocore", "pyyaml", "jsonschema"])
    rounds = 3 if quick else 5
    with fake_s3() as server:
        server.objects[f"/{BUCKET}/{KEY}"] = (CATALOGUE.read_bytes(), "application/yaml")
        for where in ("file", "S3"):
            runs = {era: [_start(server.url, era, where) for _ in range(rounds)] for era in ("before", "now")}
            what = f"a cold start's tool catalogue from {'a file' if where == 'file' else 'S3'}: read, YAML, schemas"
            before = section.add(f"{what}; before", "ms", runs["before"])
            now = section.add(f"{what}; now", "ms", runs["now"])
            now.note = (
                f"{statistics.median(runs['now']) / before.median:.2f}x before" if before.median else ""
            )
        _warm(section, server.url, 30 if quick else 300)
    return section


def _warm(section: Section, url: str, runs: int) -> None:
    import boto3
    from botocore.config import Config

    from rag_orchestrator.aws_s3 import S3Objects
    from rag_orchestrator.aws_sigv4 import Credentials

    with mock.patch.dict(os.environ, {"AWS_ENDPOINT_URL_S3": url, **CREDENTIALS}):
        config = Config(connect_timeout=3, read_timeout=5, retries={"mode": "adaptive", "max_attempts": 3})
        theirs = boto3.session.Session().client("s3", config=config)
        ours = S3Objects(Credentials("bench", "bench"), "us-east-1", read_timeout=5, max_attempts=3)
        calls = tuple(
            lambda n, c=client: c.get_object(Bucket=BUCKET, Key=KEY)["Body"].read()
            for client in (ours, theirs)
        )
        labels = ("a warm GetObject's client CPU, aws_s3", "a warm GetObject's client CPU, boto3 (before)")
        in_process(section, labels, calls, runs)  # type: ignore[arg-type]
        ours.close()
