"""AWS clients of one session (boto3's, and ours for the JSON-protocol services), made where a request first needs them and handed down from the composition
root, and secrets read from SSM or Secrets Manager (on the moto server) the way a deployed function reads
them."""

from __future__ import annotations

import json
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
import pytest

from rag_orchestrator.api.app import create_app
from rag_orchestrator.aws import AwsClients
from rag_orchestrator.aws_json import JsonClient
from rag_orchestrator.config import load_settings
from rag_orchestrator.errors import ConfigError
from rag_orchestrator.ssm_params import SecretReader


def test_clients_are_made_once_from_one_session(aws_stack):
    clients = AwsClients()
    dynamodb, s3 = clients.client("dynamodb"), clients.client("s3")
    assert clients.client("dynamodb") is dynamodb and clients.made == 2
    # The environment holds credentials and a region: DynamoDB's client is ours, S3's boto3's.
    assert isinstance(dynamodb, JsonClient) and not isinstance(s3, JsonClient)
    assert dynamodb.describe_table(TableName=aws_stack["CONVERSATIONS_TABLE"])["Table"]["TableStatus"]


def test_without_credentials_or_region_in_the_environment_the_client_is_boto3s(
    aws_stack, monkeypatch, tmp_path
):
    """A profile, SSO, an instance role, a region in ~/.aws/config: boto3 finds those, ours does not look."""
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    assert not isinstance(AwsClients().client("dynamodb"), JsonClient)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    (config := tmp_path / "config").write_text("[default]\nregion = eu-west-1\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.delenv("AWS_REGION", raising=False)
    ssm = AwsClients().client("ssm")
    assert not isinstance(ssm, JsonClient) and ssm.meta.region_name == "eu-west-1"


def test_a_lazy_client_is_made_on_first_use_only(aws_stack):
    clients = AwsClients()
    lazy = clients.lazy("s3")
    assert clients.made == 0
    assert (
        lazy.head_bucket(Bucket=aws_stack["TRANSCRIPTS_BUCKET"])["ResponseMetadata"]["HTTPStatusCode"] == 200
    )
    assert clients.made == 1
    assert lazy.meta is clients.client("s3").meta


def test_reset_forgets_clients_made_for_another_endpoint(aws_stack, monkeypatch):
    clients = AwsClients()
    before = clients.client("s3")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    clients.reset()
    after = clients.client("s3")
    assert after is not before
    assert after.meta.endpoint_url == "http://127.0.0.1:9"


def test_an_app_hands_its_parts_the_clients_of_its_root(aws_stack, aws_clients):
    services = create_app(["health"]).state.services
    assert services.aws is aws_clients  # the process's, shared by every app built in it
    assert create_app(["health"], aws=(own := AwsClients())).state.services.aws is own


def secret_in_ssm(aws_stack, monkeypatch, setting: str, value: str) -> Any:
    """`setting` unset in the environment and held by an SSM parameter (`<SETTING>_PARAM`); the SSM client."""
    ssm = boto3.client("ssm", endpoint_url=aws_stack["endpoint"])
    ssm.put_parameter(Name=f"/rag/{setting}", Value=value, Type="SecureString", Overwrite=True)
    monkeypatch.delenv(setting.upper(), raising=False)
    monkeypatch.setenv(f"{setting.upper()}_PARAM", f"/rag/{setting}")
    return ssm


def test_secret_comes_from_ssm_and_is_cached(aws_stack, in_lambda, monkeypatch):
    ssm = secret_in_ssm(aws_stack, monkeypatch, "deepseek_api_key", "sk-from-ssm")
    clients = AwsClients()
    settings = load_settings().read_secrets_with(SecretReader(clients))

    assert settings.secret("deepseek_api_key") == "sk-from-ssm"
    ssm.put_parameter(Name="/rag/deepseek_api_key", Value="sk-rotated", Type="SecureString", Overwrite=True)
    assert settings.secret("deepseek_api_key") == "sk-from-ssm"  # cached for max_age (5 minutes)
    clients.reset()  # a new client (as after a cold start) reads the parameter again
    assert settings.secret("deepseek_api_key") == "sk-rotated"


def test_an_apps_settings_read_ssm_through_its_root(aws_stack, in_lambda, monkeypatch):
    secret_in_ssm(aws_stack, monkeypatch, "deepseek_api_key", "sk-from-ssm")
    settings = load_settings()
    assert (
        create_app(["health"], settings).state.services.settings.secret("deepseek_api_key") == "sk-from-ssm"
    )


def test_settings_no_root_gave_a_reader_name_the_secret_they_cannot_read(in_lambda, monkeypatch):
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    monkeypatch.setenv("DEEPSEEK_API_KEY_PARAM", "/rag/deepseek")
    with pytest.raises(ConfigError, match="DEEPSEEK_API_KEY_PARAM"):
        load_settings().secret("deepseek_api_key")


def test_secret_from_the_environment_wins_and_needs_no_aws(in_lambda, monkeypatch):
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-env")
    monkeypatch.setenv("DEEPSEEK_API_KEY_PARAM", "/rag/never-read")
    clients = AwsClients()
    assert load_settings().read_secrets_with(SecretReader(clients)).secret("deepseek_api_key") == "sk-env"
    assert clients.made == 0


def test_threads_asking_at_once_for_a_secret_fetch_it_once(aws_stack, in_lambda, monkeypatch):
    secret_in_ssm(aws_stack, monkeypatch, "chroma_token", "chroma-token")
    clients = AwsClients()
    settings = load_settings().read_secrets_with(SecretReader(clients))
    fetched = []
    ssm = clients.client("ssm")
    sent = ssm.call

    def counted(operation: str, params: dict) -> dict:
        fetched.append(params["Name"])
        return sent(operation, params)

    ssm.call = counted
    start = threading.Barrier(8)

    def ask() -> str | None:
        start.wait()  # as a cold start's first turn does: the model client and Chroma's thread at once
        return settings.secret("chroma_token")

    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(lambda _: ask(), range(8))) == ["chroma-token"] * 8
    assert fetched == ["/rag/chroma_token"]


def secret_in_secrets_manager(
    clients: AwsClients, monkeypatch, setting: str, value: str, *, by_arn: bool = False
) -> str:
    """`setting` held by a new Secrets Manager secret that `<SETTING>_PARAM` names; the secret's ARN."""
    name = f"rag/{setting}-{uuid.uuid4().hex[:8]}"
    arn = clients.client("secretsmanager").create_secret(Name=name, SecretString=value)["ARN"]
    monkeypatch.delenv(setting.upper(), raising=False)
    monkeypatch.setenv(f"{setting.upper()}_PARAM", arn if by_arn else f"secretsmanager:{name}")
    return arn


@pytest.mark.parametrize("by_arn", [False, True], ids=["by-name", "by-arn"])
def test_secret_comes_from_secrets_manager_and_is_cached(aws_stack, in_lambda, monkeypatch, by_arn):
    clients = AwsClients()
    arn = secret_in_secrets_manager(clients, monkeypatch, "qwen_api_key", "sk-from-secrets", by_arn=by_arn)
    settings = load_settings().read_secrets_with(SecretReader(clients))

    assert settings.secret("qwen_api_key") == "sk-from-secrets"
    clients.client("secretsmanager").put_secret_value(SecretId=arn, SecretString="sk-rotated")
    assert settings.secret("qwen_api_key") == "sk-from-secrets"  # cached for max_age (5 minutes)
    clients.reset()
    assert settings.secret("qwen_api_key") == "sk-rotated"


@pytest.mark.parametrize("store", ["ssm", "secretsmanager"])
def test_one_field_of_a_json_secret(aws_stack, in_lambda, monkeypatch, store):
    clients = AwsClients()
    keys = json.dumps({"deepseek": "sk-deepseek", "qwen": "sk-qwen"})
    if store == "ssm":
        secret_in_ssm(aws_stack, monkeypatch, "deepseek_api_key", keys)
        reference = "/rag/deepseek_api_key"
    else:
        reference = secret_in_secrets_manager(clients, monkeypatch, "deepseek_api_key", keys)
    monkeypatch.setenv("DEEPSEEK_API_KEY_PARAM", f"{reference}#deepseek")
    assert (
        load_settings().read_secrets_with(SecretReader(clients)).secret("deepseek_api_key") == "sk-deepseek"
    )
    monkeypatch.setenv("DEEPSEEK_API_KEY_PARAM", f"{reference}#openai")
    with pytest.raises(ValueError, match="has no string field 'openai'"):
        load_settings().read_secrets_with(SecretReader(clients)).secret("deepseek_api_key")


def test_a_missing_secret_fails_with_the_services_error(aws_stack, in_lambda, monkeypatch):
    monkeypatch.setenv("CHROMA_TOKEN_PARAM", "secretsmanager:rag/no-such-secret")
    with pytest.raises(Exception, match="ResourceNotFoundException"):
        load_settings().read_secrets_with(SecretReader(AwsClients())).secret("chroma_token")
