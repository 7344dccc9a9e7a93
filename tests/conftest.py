"""Suite-wide fixtures: the network is blocked beyond loopback; local servers start once per session."""

from __future__ import annotations

import ipaddress
import os
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from devserver.stack import LOCAL_DEFAULTS, Service, free_port, start_chroma, start_moto

if TYPE_CHECKING:
    from rag_orchestrator.aws import AwsClients

pytest_plugins = ["tests.fakes.fake_llm", "tests.fakes.jwks_server"]  # `fake_llm`, `jwks` for every module

_real_connect = socket.socket.connect


def _loopback_only(self: socket.socket, address: object) -> None:
    if isinstance(address, tuple) and self.family in (socket.AF_INET, socket.AF_INET6):
        host = address[0]
        try:
            allowed = ipaddress.ip_address(host).is_loopback
        except ValueError:
            allowed = host == "localhost"
        if not allowed:
            raise ConnectionRefusedError(f"tests may not reach beyond loopback (tried {host})")
    return _real_connect(self, address)


@pytest.fixture(autouse=True, scope="session")
def block_network() -> Iterator[None]:
    socket.socket.connect = _loopback_only  # type: ignore[method-assign]
    yield
    socket.socket.connect = _real_connect  # type: ignore[method-assign]


@pytest.fixture(autouse=True, scope="session")
def base_environment() -> Iterator[None]:
    """Local defaults with no credentials or keys from the machine leaking in."""
    saved = dict(os.environ)
    for key in list(os.environ):
        if key.endswith("_API_KEY") or key.startswith(("AWS_", "JWT_", "CHROMA_")):
            del os.environ[key]
    os.environ.update(LOCAL_DEFAULTS)
    os.environ["CONVERSATION_STORAGE"] = "memory"
    # A title call after a first turn would take the fake LLM's next scripted reply (and show in its
    # requests) after a test's turn has ended: the title tests turn it on (test_titles.py).
    os.environ["AUTO_TITLE"] = "false"
    # Likewise the condensing call of a later turn's search (docs/retrieval.md): the follow-up tests turn it on.
    os.environ["CONDENSE_FOLLOW_UPS"] = "false"
    os.environ["AWS_ENDPOINT_URL"] = "http://127.0.0.1:9"  # nothing there unless a test starts moto
    os.environ["CHROMA_URL"] = "http://127.0.0.1:9"
    yield
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture(autouse=True)
def fresh_settings() -> Iterator[None]:
    """Settings and the apps' AWS clients are kept per process; tests that change the environment need
    them anew."""
    from rag_orchestrator.api.deps import process_aws
    from rag_orchestrator.config import get_settings

    get_settings.cache_clear()
    process_aws().reset()
    yield
    get_settings.cache_clear()
    process_aws().reset()


@pytest.fixture
def aws_clients() -> AwsClients:
    """The AWS clients the apps a test builds use (the composition root's), made anew for each test."""
    from rag_orchestrator.api.deps import process_aws

    return process_aws()


@pytest.fixture(scope="session")
def servers_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("servers")


@pytest.fixture(scope="session")
def moto_server(servers_dir: Path) -> Iterator[Service]:
    service = start_moto(f"http://127.0.0.1:{free_port()}", servers_dir / "moto.log")
    yield service
    service.stop()


@pytest.fixture(scope="session")
def chroma_server(servers_dir: Path) -> Iterator[Service]:
    service = start_chroma(
        f"http://127.0.0.1:{free_port()}", servers_dir / "chroma", servers_dir / "chroma.log"
    )
    yield service
    service.stop()


@pytest.fixture
def aws_stack(moto_server: Service, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """DynamoDB and S3 on the moto server, with the table and buckets of template.yaml."""
    from devserver.resources import create_resources

    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_server.url)
    monkeypatch.setenv("CONVERSATION_STORAGE", "dynamodb")
    buckets = ("TRANSCRIPTS_BUCKET", "DOCUMENTS_BUCKET", "ATTACHMENTS_BUCKET")
    names = {key: LOCAL_DEFAULTS[key] for key in ("CONVERSATIONS_TABLE", *buckets)}
    create_resources(names["CONVERSATIONS_TABLE"], [names[b] for b in buckets])
    return {"endpoint": moto_server.url, **names}


@pytest.fixture
def own_tables(aws_stack: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A table and a (versioned, as deployed) bucket of the test's own on the shared moto server:
    for tests that run the archival job, which reads the whole ByArchive index."""
    import boto3

    from devserver.resources import create_resources

    suffix = uuid.uuid4().hex[:8]
    names = {
        "CONVERSATIONS_TABLE": f"archive-{suffix}",
        "TRANSCRIPTS_BUCKET": f"archive-transcripts-{suffix}",
    }
    create_resources(names["CONVERSATIONS_TABLE"], [names["TRANSCRIPTS_BUCKET"]])
    s3 = boto3.client("s3", endpoint_url=aws_stack["endpoint"])
    s3.put_bucket_versioning(
        Bucket=names["TRANSCRIPTS_BUCKET"], VersioningConfiguration={"Status": "Enabled"}
    )
    for key, value in names.items():
        monkeypatch.setenv(key, value)
    return names | {"endpoint": aws_stack["endpoint"]}


@pytest.fixture
def chroma_url(chroma_server: Service, monkeypatch: pytest.MonkeyPatch) -> str:
    """The session's Chroma server, with conversation memory of this test's own (turns index into it)."""
    monkeypatch.setenv("CHROMA_URL", chroma_server.url)
    monkeypatch.setenv("CHROMA_MEMORY_COLLECTION", f"memory-{uuid.uuid4().hex[:12]}")
    return chroma_server.url


@pytest.fixture
def in_lambda(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a deployed function's environment adds that changes behaviour: secrets from SSM, JWT auth."""
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "rag-orchestrator-test-ApiFunction")
    monkeypatch.setenv("AUTH_MODE", "jwt")
    monkeypatch.setenv("JWT_ISSUER", "https://issuer.example.com")
    monkeypatch.setenv("JWT_AUDIENCE", "aud")
