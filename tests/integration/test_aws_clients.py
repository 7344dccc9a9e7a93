"""boto3 clients from one shared session, created lazily where a request may not need them, and
secrets read from SSM or Secrets Manager (on the moto server) the way a deployed function reads them."""

from __future__ import annotations

import json
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
import pytest

from rag_orchestrator import aws
from rag_orchestrator.config import load_settings


def test_clients_are_made_once_from_one_session(aws_stack):
    dynamodb, s3 = aws.client("dynamodb"), aws.client("s3")
    assert aws.client("dynamodb") is dynamodb
    assert dynamodb.meta.events is not s3.meta.events  # two real clients
    assert aws._session() is aws._session()
    assert dynamodb.describe_table(TableName=aws_stack["CONVERSATIONS_TABLE"])["Table"]["TableStatus"]


def test_lazy_client_is_created_on_first_use_only(aws_stack):
    lazy = aws.LazyClient("s3")
    assert aws.client.cache_info().currsize == 0
    assert (
        lazy.head_bucket(Bucket=aws_stack["TRANSCRIPTS_BUCKET"])["ResponseMetadata"]["HTTPStatusCode"] == 200
    )
    assert aws.client.cache_info().currsize == 1
    assert lazy.meta is aws.client("s3").meta


def test_reset_forgets_clients_made_for_another_endpoint(aws_stack, monkeypatch):
    before = aws.client("s3")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    aws.reset()
    after = aws.client("s3")
    assert after is not before
    assert after.meta.endpoint_url == "http://127.0.0.1:9"


def secret_in_ssm(aws_stack, monkeypatch, setting: str, value: str) -> Any:
    """`setting` unset in the environment and held by an SSM parameter (`<SETTING>_PARAM`); the SSM client."""
    ssm = boto3.client("ssm", endpoint_url=aws_stack["endpoint"])
    ssm.put_parameter(Name=f"/rag/{setting}", Value=value, Type="SecureString", Overwrite=True)
    monkeypatch.delenv(setting.upper(), raising=False)
    monkeypatch.setenv(f"{setting.upper()}_PARAM", f"/rag/{setting}")
    return ssm


def test_secret_comes_from_ssm_and_is_cached(aws_stack, in_lambda, monkeypatch):
    ssm = secret_in_ssm(aws_stack, monkeypatch, "deepseek_api_key", "sk-from-ssm")
    settings = load_settings()

    assert settings.secret("deepseek_api_key") == "sk-from-ssm"
    ssm.put_parameter(Name="/rag/deepseek_api_key", Value="sk-rotated", Type="SecureString", Overwrite=True)
    assert settings.secret("deepseek_api_key") == "sk-from-ssm"  # cached for max_age (5 minutes)
    aws.reset()  # a new client (as after a cold start) reads the parameter again
    assert settings.secret("deepseek_api_key") == "sk-rotated"


def test_secret_from_the_environment_wins_and_needs_no_aws(in_lambda, monkeypatch):
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-env")
    monkeypatch.setenv("DEEPSEEK_API_KEY_PARAM", "/rag/never-read")
    assert load_settings().secret("deepseek_api_key") == "sk-env"
    assert aws.client.cache_info().currsize == 0


def test_threads_asking_at_once_for_a_secret_fetch_it_once(aws_stack, in_lambda, monkeypatch):
    secret_in_ssm(aws_stack, monkeypatch, "chroma_token", "chroma-token")
    settings = load_settings()
    fetched = []
    aws.client("ssm").meta.events.register(
        "provide-client-params.ssm.GetParameter", lambda params, **_: fetched.append(params["Name"])
    )
    start = threading.Barrier(8)

    def ask() -> str | None:
        start.wait()  # as a cold start's first turn does: the model client and Chroma's thread at once
        return settings.secret("chroma_token")

    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(lambda _: ask(), range(8))) == ["chroma-token"] * 8
    assert fetched == ["/rag/chroma_token"]


def secret_in_secrets_manager(monkeypatch, setting: str, value: str, *, by_arn: bool = False) -> str:
    """`setting` held by a new Secrets Manager secret that `<SETTING>_PARAM` names; the secret's ARN."""
    name = f"rag/{setting}-{uuid.uuid4().hex[:8]}"
    arn = aws.client("secretsmanager").create_secret(Name=name, SecretString=value)["ARN"]
    monkeypatch.delenv(setting.upper(), raising=False)
    monkeypatch.setenv(f"{setting.upper()}_PARAM", arn if by_arn else f"secretsmanager:{name}")
    return arn


@pytest.mark.parametrize("by_arn", [False, True], ids=["by-name", "by-arn"])
def test_secret_comes_from_secrets_manager_and_is_cached(aws_stack, in_lambda, monkeypatch, by_arn):
    arn = secret_in_secrets_manager(monkeypatch, "qwen_api_key", "sk-from-secrets", by_arn=by_arn)
    settings = load_settings()

    assert settings.secret("qwen_api_key") == "sk-from-secrets"
    aws.client("secretsmanager").put_secret_value(SecretId=arn, SecretString="sk-rotated")
    assert settings.secret("qwen_api_key") == "sk-from-secrets"  # cached for max_age (5 minutes)
    aws.reset()
    assert settings.secret("qwen_api_key") == "sk-rotated"


@pytest.mark.parametrize("store", ["ssm", "secretsmanager"])
def test_one_field_of_a_json_secret(aws_stack, in_lambda, monkeypatch, store):
    keys = json.dumps({"deepseek": "sk-deepseek", "qwen": "sk-qwen"})
    if store == "ssm":
        secret_in_ssm(aws_stack, monkeypatch, "deepseek_api_key", keys)
        reference = "/rag/deepseek_api_key"
    else:
        reference = secret_in_secrets_manager(monkeypatch, "deepseek_api_key", keys)
    monkeypatch.setenv("DEEPSEEK_API_KEY_PARAM", f"{reference}#deepseek")
    assert load_settings().secret("deepseek_api_key") == "sk-deepseek"
    monkeypatch.setenv("DEEPSEEK_API_KEY_PARAM", f"{reference}#openai")
    with pytest.raises(ValueError, match="has no string field 'openai'"):
        load_settings().secret("deepseek_api_key")


def test_a_missing_secret_fails_with_the_services_error(aws_stack, in_lambda, monkeypatch):
    monkeypatch.setenv("CHROMA_TOKEN_PARAM", "secretsmanager:rag/no-such-secret")
    with pytest.raises(Exception, match="ResourceNotFoundException"):
        load_settings().secret("chroma_token")
