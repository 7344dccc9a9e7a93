"""The tool catalogue as deployed: an S3 object or an SSM parameter, read at start and validated like a
file; tool secrets under one SSM path prefix, or one Secrets Manager name prefix. Against the moto
server, as a function in Lambda sees it."""

from __future__ import annotations

import uuid

import pytest
import yaml
from fastapi.testclient import TestClient

from rag_orchestrator.api.deps import process_aws
from rag_orchestrator.config import load_settings
from rag_orchestrator.errors import ConfigError
from rag_orchestrator.ssm_params import SecretReader
from rag_orchestrator.tools.assertion import create_signer, generate_key_pem, load_key
from rag_orchestrator.tools.catalog import environment_secrets, load_catalog
from rag_orchestrator.tools.toolbox import build_toolbox
from tests.fakes.scripted import MemorySearchTool

pytestmark = pytest.mark.integration

PREFIX = "/rag-orchestrator/tools/"
TOKEN = "orders-token-0a1b2c3d"
ASSERTION_KEY = "/rag-orchestrator/assertion-key"
PEM = generate_key_pem()
CATALOG = {
    "tools": [
        {
            "name": "get_order_status",
            "description": "Look up the status of an order",
            "inputSchema": {
                "type": "object",
                "properties": {"orderId": {"type": "string"}},
                "required": ["orderId"],
            },
            "http": {
                "method": "GET",
                "url": "https://orders.example.com/orders/{orderId}",
                "headers": {"Authorization": "Bearer ${ORDERS_API_TOKEN}"},
            },
        }
    ]
}


@pytest.fixture
def deployed(aws_stack, in_lambda, monkeypatch) -> dict[str, str]:
    """The catalogue in S3 and in SSM, the tool's token under the prefix, as an operator puts them."""
    monkeypatch.setenv("TOOL_SECRETS_PREFIX", PREFIX)
    aws = process_aws()
    text = yaml.safe_dump(CATALOG)
    bucket = aws_stack["DOCUMENTS_BUCKET"]
    aws.client("s3").put_object(Bucket=bucket, Key="config/tools.yaml", Body=text.encode())
    ssm = aws.client("ssm")
    ssm.put_parameter(Name="/rag-orchestrator/tool-catalog", Type="String", Value=text, Overwrite=True)
    ssm.put_parameter(Name=f"{PREFIX}ORDERS_API_TOKEN", Type="SecureString", Value=TOKEN, Overwrite=True)
    # The operator's key, where the template lets the functions read: under TOOL_SECRETS_PREFIX
    ssm.put_parameter(Name=f"{PREFIX}ASSERTION_PRIVATE_KEY", Type="SecureString", Value=PEM, Overwrite=True)
    return {"s3": f"s3://{bucket}/config/tools.yaml", "ssm": "ssm:/rag-orchestrator/tool-catalog"}


@pytest.mark.parametrize("where", ["s3", "ssm"])
def test_the_catalogue_loads_from_s3_or_ssm_with_its_secret_from_the_prefix(deployed, where):
    settings = load_settings(tool_catalog_path=deployed[where])
    aws = process_aws()
    toolbox = build_toolbox(
        settings,
        rag_search=MemorySearchTool([]),
        embedder=None,
        cache=None,
        aws=aws,
        secrets=SecretReader(aws),
    )
    tool = toolbox.registry.get("get_order_status")
    assert tool is not None and tool._headers["Authorization"] == f"Bearer {TOKEN}"


def test_the_app_reads_the_catalogue_once_at_start(deployed, monkeypatch):
    from rag_orchestrator.api.app import create_app

    monkeypatch.setenv("TOOL_CATALOG_PATH", deployed["s3"])
    reads: list[str] = []
    # S3's GetObject without boto3 (aws_s3.py) where the environment holds credentials, as Lambda's does
    process_aws().objects().meta.events.register("before-call.s3.GetObject", lambda **_: reads.append("get"))
    app = create_app(["chat", "tools"])
    assert app.state.services.toolbox.registry.get("get_order_status") is not None
    TestClient(app)  # serving requests reads nothing more
    assert reads == ["get"]


def test_a_bad_catalogue_in_s3_names_the_object_and_the_tool(deployed):
    broken = {"tools": [{**CATALOG["tools"][0], "http": {"method": "GET", "url": "ftp://x"}}]}
    location = deployed["s3"].replace("tools.yaml", "broken.yaml")
    bucket, _, key = location.removeprefix("s3://").partition("/")
    process_aws().client("s3").put_object(Bucket=bucket, Key=key, Body=yaml.safe_dump(broken).encode())
    with pytest.raises(ConfigError, match=rf"{location}: tool 'get_order_status': http.url"):
        load_catalog(load_settings(tool_catalog_path=location), aws=process_aws())


@pytest.mark.parametrize(
    ("location", "says"),
    [
        ("s3://{bucket}/config/missing.yaml", r"cannot read s3://.*/config/missing.yaml \(NoSuchKey\)"),
        ("s3://{bucket}/config/tools.txt", "must end in .yaml, .yml or .json"),
        ("ssm:/rag-orchestrator/no-such-catalog", r"cannot read ssm:/rag-orchestrator/no-such-catalog"),
    ],
)
def test_an_unreadable_catalogue_stops_the_start_with_its_location(deployed, aws_stack, location, says):
    location = location.format(bucket=aws_stack["DOCUMENTS_BUCKET"])
    with pytest.raises(ConfigError, match=says):
        load_catalog(load_settings(tool_catalog_path=location), aws=process_aws())


def test_a_secret_missing_under_the_prefix_names_the_parameter(deployed):
    aws = process_aws()
    aws.client("ssm").delete_parameter(Name=f"{PREFIX}ORDERS_API_TOKEN")
    with pytest.raises(ConfigError, match=rf"the secret {PREFIX}ORDERS_API_TOKEN cannot be read"):
        load_catalog(
            load_settings(tool_catalog_path=deployed["ssm"]), environment_secrets(SecretReader(aws)), aws
        )


def test_tool_secrets_may_live_in_secrets_manager_under_a_name_prefix(deployed, monkeypatch):
    aws = process_aws()
    prefix = f"rag-orchestrator-{uuid.uuid4().hex[:8]}/tools/"
    aws.client("secretsmanager").create_secret(Name=f"{prefix}ORDERS_API_TOKEN", SecretString="from-secrets")
    monkeypatch.setenv("TOOL_SECRETS_PREFIX", f"secretsmanager:{prefix}")
    toolbox = build_toolbox(
        load_settings(tool_catalog_path=deployed["ssm"]),
        rag_search=MemorySearchTool([]),
        embedder=None,
        cache=None,
        aws=aws,
        secrets=SecretReader(aws),
    )
    assert toolbox.registry.get("get_order_status")._headers["Authorization"] == "Bearer from-secrets"
    monkeypatch.setenv("TOOL_SECRETS_PREFIX", "secretsmanager:rag-orchestrator/no-such-tools/")
    with pytest.raises(ConfigError, match="the secret secretsmanager:rag-orchestrator/no-such-tools/ORDERS"):
        load_catalog(
            load_settings(tool_catalog_path=deployed["ssm"]), environment_secrets(SecretReader(aws)), aws
        )


def test_the_assertion_key_is_read_from_ssm_and_a_catalogue_that_needs_it_refuses_to_start_without(
    deployed, monkeypatch
):
    aws = process_aws()
    secrets = SecretReader(aws)  # the composition root's reader: the key is read through it, like any secret
    settings = load_settings(tool_catalog_path=deployed["ssm"])
    toolbox = build_toolbox(
        settings, rag_search=MemorySearchTool([]), embedder=None, cache=None, aws=aws, secrets=secrets
    )
    assert toolbox.registry.get("get_order_status") is not None
    assert create_signer(settings, secrets).jwks() == {"keys": [load_key(PEM).jwk]}  # the operator's key
    monkeypatch.setenv("ORDERS_API_TOKEN_PARAM", f"{PREFIX}ORDERS_API_TOKEN")  # the catalogue's own secret
    monkeypatch.delenv("TOOL_SECRETS_PREFIX")
    with pytest.raises(
        ConfigError, match=r"ASSERTION_PRIVATE_KEY_PARAM \(or TOOL_SECRETS_PREFIX\) is required"
    ):
        build_toolbox(
            load_settings(tool_catalog_path=deployed["ssm"]),
            rag_search=MemorySearchTool([]),
            embedder=None,
            aws=aws,
            secrets=secrets,
        )
