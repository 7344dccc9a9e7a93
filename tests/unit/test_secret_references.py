"""The forms a secret's reference takes (`<NAME>_PARAM`, TOOL_SECRETS_PREFIX + NAME): docs/configuration.md."""

from __future__ import annotations

import pytest

from rag_orchestrator.ssm_params import SecretReference

ARN = "arn:aws-cn:secretsmanager:cn-north-1:123456789012:secret:rag/deepseek-AbCdEf"


@pytest.mark.parametrize(
    ("reference", "parsed"),
    [
        ("/rag-orchestrator/deepseek-api-key", SecretReference("ssm", "/rag-orchestrator/deepseek-api-key")),
        ("/rag/keys#deepseek", SecretReference("ssm", "/rag/keys", "deepseek")),
        ("secretsmanager:rag/deepseek", SecretReference("secretsmanager", "rag/deepseek")),
        ("secretsmanager:rag/keys#deepseek", SecretReference("secretsmanager", "rag/keys", "deepseek")),
        (ARN, SecretReference("secretsmanager", ARN)),
        (f"secretsmanager:{ARN}#qwen", SecretReference("secretsmanager", ARN, "qwen")),
    ],
)
def test_ssm_names_secrets_manager_names_and_arns_with_an_optional_json_field(reference, parsed):
    assert SecretReference.parse(reference) == parsed


@pytest.mark.parametrize(
    "reference",
    [
        "rag/deepseek",  # a bare name: which store?
        "secretsmanager:",
        "secretsmanager:rag deepseek",
        "arn:aws:ssm:us-east-1:123456789012:parameter/rag/key",
        "arn:aws:secretsmanager:us-east-1:12345:secret:rag",
    ],
)
def test_anything_else_is_refused_saying_what_is_accepted(reference):
    with pytest.raises(ValueError, match=r"neither an SSM parameter name .* nor a Secrets Manager reference"):
        SecretReference.parse(reference)


@pytest.mark.parametrize("reference", ["/rag/keys#", "secretsmanager:rag/keys#a b"])
def test_a_json_field_is_a_plain_name(reference):
    with pytest.raises(ValueError, match="'#' must be followed by a JSON field name"):
        SecretReference.parse(reference)
