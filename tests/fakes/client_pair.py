"""Our AWS client without boto3 and boto3's own, both on one scripted server (three attempts each),
with our client's pauses between attempts recorded instead of waited: what the tests comparing the two
(test_aws_bedrock.py, test_aws_s3.py) stand on."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import pytest
from botocore.config import Config

from rag_orchestrator import aws_wire
from rag_orchestrator.aws_sigv4 import Credentials
from rag_orchestrator.aws_wire import environment


@contextmanager
def client_pair[Ours](
    monkeypatch: pytest.MonkeyPatch,
    url: str,
    variable: str,
    ours: Callable[..., Ours],
    service: str,
    **config: Any,
) -> Iterator[tuple[Ours, Any, list[float]]]:
    """`ours(credentials, region, max_attempts=3)` reaching `url` through AWS_ENDPOINT_URL_<variable>,
    boto3's `service` client on it (botocore Config `config` besides), and our pauses."""
    monkeypatch.setenv(f"AWS_ENDPOINT_URL_{variable}", url)
    pauses: list[float] = []
    monkeypatch.setattr(aws_wire.time, "sleep", pauses.append)  # the pauses, not the waiting
    found: tuple[Credentials, str] | None = environment()
    assert found is not None  # the suite's environment holds credentials and a region
    client = ours(*found, max_attempts=3)
    retries = Config(retries={"mode": "standard", "max_attempts": 3}, **config)
    theirs = boto3.session.Session().client(service, endpoint_url=url, config=retries)
    try:
        yield client, theirs, pauses
    finally:
        client.close()  # type: ignore[attr-defined]
