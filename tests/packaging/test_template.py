"""Static checks of template.yaml: `sam validate --lint`, and the properties the design relies on.

The template is read with devserver.cfn_yaml (the loader the dev server uses to create the
table from the same definition), so intrinsic functions appear in their long JSON form:
``!Ref X`` -> ``{"Ref": "X"}``, ``!Sub s`` -> ``{"Fn::Sub": s}``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = REPO / "template.yaml"
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from devserver.cfn_yaml import load_template, loads_template  # noqa: E402
from devserver.sam_cli import sam_cli, sam_env  # noqa: E402

FUNCTIONS = {
    "ApiFunction": ("functions/api/", "app.handler"),
    "ChatStreamFunction": ("functions/chat_stream/", "run.sh"),
    "ArchiveFunction": ("functions/archive/", "app.handler"),
    "IngestFunction": ("functions/ingest/", "app.handler"),
    "AttachmentFunction": ("functions/attachments/", "app.handler"),
    "LifecycleFunction": ("functions/lifecycle/", "app.handler"),
}
SHARED_ENV = {
    "CONVERSATIONS_TABLE",
    "TRANSCRIPTS_BUCKET",
    "DOCUMENTS_BUCKET",
    "ATTACHMENTS_BUCKET",
    "ATTACHMENT_MAX_BYTES",
    "ATTACHMENT_OCR_BACKEND",
    "ATTACHMENT_SPEECH_BACKEND",
    "ATTACHMENT_CAPTION_BACKEND",
    "AUTH_MODE",
    "JWT_ISSUER",
    "JWT_AUDIENCE",
    "CHROMA_URL",
    "CHROMA_TOKEN_PARAM",
    "TURN_DEADLINE_MARGIN_SECONDS",
    "LOG_LEVEL",
}
# The functions that call models and mint guest tokens, and the references that go only to them.
TURN_FUNCTIONS = ("ApiFunction", "ChatStreamFunction")
SECRET_PARAMETERS = {
    "DEEPSEEK_API_KEY_PARAM": "DeepSeekApiKeyParameter",
    "QWEN_API_KEY_PARAM": "QwenApiKeyParameter",
    "OPENAI_COMPATIBLE_API_KEY_PARAM": "OpenAICompatibleApiKeyParameter",
    "CHROMA_TOKEN_PARAM": "ChromaTokenParameter",
    "EMBEDDING_API_KEY_PARAM": "EmbeddingApiKeyParameter",
    "RERANKER_API_KEY_PARAM": "RerankerApiKeyParameter",
    "ATTACHMENT_CAPTION_API_KEY_PARAM": "AttachmentCaptionApiKeyParameter",
    "ATTACHMENT_WHISPER_API_KEY_PARAM": "AttachmentWhisperApiKeyParameter",
    "GUEST_TOKEN_SECRET_PARAM": "GuestTokenSecretParameter",
}
OWN_MANAGED_POLICIES = {
    "TurnSecretsAccess",
    "ChromaTokenAccess",
    "EmbeddingKeyAccess",
    "AttachmentKeysAccess",
}
ALLOWED_MANAGED_POLICIES = {
    "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole",
    "arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess",
    # SAM's for a DynamoDB stream event (LifecycleFunction): reading streams and writing logs, no data.
    "arn:aws:iam::aws:policy/service-role/AWSLambdaDynamoDBExecutionRole",
}


# ---------------------------------------------------------------- helpers


def require_sam() -> Path:
    sam = sam_cli()
    if not sam.exists():
        pytest.fail(f"SAM CLI not found at {sam}: install requirements/sam.txt into .venv-sam or set SAM_CLI")
    return sam


def walk(node: Any):
    """Every dict and list inside node, depth first."""
    yield node
    if isinstance(node, dict):
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk(value)


def as_list(value: Any) -> list:
    return value if isinstance(value, list) else [value]


def policy_statements(node: Any):
    """Every statement of every policy document inside node; both branches of a conditional one."""
    for item in walk(node):
        if isinstance(item, dict) and isinstance(item.get("Statement"), list | dict):
            for statement in as_list(item["Statement"]):
                yield from branches(statement)


def branches(node: Any):
    """The node, or each value an Fn::If may choose (AWS::NoValue left out)."""
    if isinstance(node, dict) and "Fn::If" in node:
        for branch in node["Fn::If"][1:]:
            yield from branches(branch)
    elif node != {"Ref": "AWS::NoValue"}:
        yield node


def wildcard_actions(statement: dict) -> list[str]:
    actions = as_list(statement.get("Action", [])) + as_list(statement.get("NotAction", []))
    return [a for a in actions if not isinstance(a, str) or "*" in a]


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template(TEMPLATE)


@pytest.fixture(scope="module")
def resources(template) -> dict[str, Any]:
    return template["Resources"]


def effective_function(template: dict, logical_id: str) -> dict[str, Any]:
    """A function's properties with the template's Globals merged in, as SAM merges them:
    lists (Layers) are appended to the global ones, maps (Environment) are merged,
    scalars are overridden."""
    glob = dict(template.get("Globals", {}).get("Function", {}))
    own = template["Resources"][logical_id]["Properties"]
    merged: dict[str, Any] = dict(glob)
    for key, value in own.items():
        if key == "Layers":
            merged[key] = list(glob.get("Layers", [])) + list(value)
        elif key == "Environment":
            merged[key] = {
                "Variables": {
                    **glob.get("Environment", {}).get("Variables", {}),
                    **value.get("Variables", {}),
                }
            }
        else:
            merged[key] = value
    return merged


def env_of(template: dict, logical_id: str) -> dict[str, Any]:
    return effective_function(template, logical_id).get("Environment", {}).get("Variables", {})


# ---------------------------------------------------------------- sam validate --lint


def test_sam_validate_lint(tmp_path):
    sam = require_sam()
    proc = subprocess.run(
        [str(sam), "validate", "--lint", "--template-file", str(TEMPLATE), "--region", "us-east-1"],
        cwd=REPO,
        env=sam_env(tmp_path / "sam-app-dir"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    print(proc.stdout, proc.stderr)
    assert proc.returncode == 0, f"sam validate --lint failed:\n{proc.stdout}\n{proc.stderr}"


# ---------------------------------------------------------------- the loader


def test_loader_turns_short_form_tags_into_long_form():
    data = loads_template(
        "AWSTemplateFormatVersion: 2010-09-09\n"
        "a: !Ref Foo\n"
        "b: !GetAtt Foo.Arn\n"
        "c: !GetAtt [Foo, Arn]\n"
        'd: !Sub "x-${AWS::Region}"\n'
        "e: !If [IsProd, !Ref A, !Ref AWS::NoValue]\n"
        "f: !Join ['', [a, !Ref B]]\n"
        "g: !Condition IsProd\n"
        "h: !Select [0, !GetAZs '']\n"
    )
    assert data == {
        "AWSTemplateFormatVersion": "2010-09-09",
        "a": {"Ref": "Foo"},
        "b": {"Fn::GetAtt": ["Foo", "Arn"]},
        "c": {"Fn::GetAtt": ["Foo", "Arn"]},
        "d": {"Fn::Sub": "x-${AWS::Region}"},
        "e": {"Fn::If": ["IsProd", {"Ref": "A"}, {"Ref": "AWS::NoValue"}]},
        "f": {"Fn::Join": ["", ["a", {"Ref": "B"}]]},
        "g": {"Condition": "IsProd"},
        "h": {"Fn::Select": [0, {"Fn::GetAZs": ""}]},
    }


# ---------------------------------------------------------------- functions and layer


def test_the_functions_exist_with_their_code_and_handlers(template, resources):
    functions = {k for k, v in resources.items() if v["Type"] == "AWS::Serverless::Function"}
    assert functions == set(FUNCTIONS)
    for logical_id, (code_uri, handler) in FUNCTIONS.items():
        props = effective_function(template, logical_id)
        assert props["CodeUri"] == code_uri, logical_id
        assert props["Handler"] == handler, logical_id


def test_every_function_is_python312_arm64_with_the_core_layer(template):
    for logical_id in FUNCTIONS:
        props = effective_function(template, logical_id)
        assert props["Runtime"] == "python3.12", logical_id
        assert props["Architectures"] == ["arm64"], logical_id
        assert {"Ref": "CoreLayer"} in props["Layers"], logical_id
        assert props["Layers"].count({"Ref": "CoreLayer"}) == 1, logical_id


def test_core_layer(resources):
    layer = resources["CoreLayer"]
    assert layer["Type"] == "AWS::Serverless::LayerVersion"
    props = layer["Properties"]
    assert props["ContentUri"] == "layers/core/"
    assert props["CompatibleRuntimes"] == ["python3.12"]
    assert props["CompatibleArchitectures"] == ["arm64"]
    # layers/core/Makefile builds it: arm64 wheels + bytecode (test_layer_imports checks the result)
    assert layer["Metadata"] == {"BuildMethod": "makefile", "BuildArchitecture": "arm64"}


def test_every_function_gets_the_shared_configuration(template):
    for logical_id in FUNCTIONS:
        env = env_of(template, logical_id)
        missing = SHARED_ENV - set(env)
        assert not missing, f"{logical_id} lacks {sorted(missing)}"
        assert env["AUTH_MODE"] == "jwt"
        assert env["JWT_ISSUER"] == {"Ref": "JwtIssuer"}
        assert env["JWT_AUDIENCE"] == {"Ref": "JwtAudience"}
        assert env["CHROMA_URL"] == {"Ref": "ChromaUrl"}
        assert env["MEMORY_ENABLED"] == {"Ref": "MemoryEnabled"}
        assert env["AUTO_TITLE"] == {"Ref": "AutoTitle"}
        assert env["CONVERSATIONS_TABLE"] == {"Ref": "ConversationsTable"}
        # the alarms and the dashboard name the code's own service and namespace: nothing may replace them
        assert "POWERTOOLS_SERVICE_NAME" not in env and "POWERTOOLS_METRICS_NAMESPACE" not in env
        assert env["LOG_LEVEL"] == {"Ref": "LogLevel"}
        assert env["TURN_DEADLINE_MARGIN_SECONDS"] == {"Ref": "TurnDeadlineMarginSeconds"}
        assert env["CHROMA_TOKEN_PARAM"] == {"Ref": "ChromaTokenParameter"}
        # No secret values in the template, only references.
        assert not {"DEEPSEEK_API_KEY", "QWEN_API_KEY", "OPENAI_COMPATIBLE_API_KEY", "CHROMA_TOKEN"} & set(
            env
        )


@pytest.mark.parametrize(
    ("variable", "parameter", "used_when", "functions"),
    [
        ("DEEPSEEK_API_KEY_PARAM", "DeepSeekApiKeyParameter", "UseDeepSeek", TURN_FUNCTIONS),
        ("QWEN_API_KEY_PARAM", "QwenApiKeyParameter", "UseQwen", TURN_FUNCTIONS),
        (
            "OPENAI_COMPATIBLE_API_KEY_PARAM",
            "OpenAICompatibleApiKeyParameter",
            "UseOpenAICompatible",
            TURN_FUNCTIONS,
        ),
        ("GUEST_TOKEN_SECRET_PARAM", "GuestTokenSecretParameter", "GuestsAllowed", TURN_FUNCTIONS),
        (
            "EMBEDDING_API_KEY_PARAM",
            "EmbeddingApiKeyParameter",
            "EmbedWithOpenAICompatible",
            tuple(FUNCTIONS),
        ),
        (
            "ATTACHMENT_CAPTION_API_KEY_PARAM",
            "AttachmentCaptionApiKeyParameter",
            "UseCaptionModel",
            tuple(FUNCTIONS),
        ),
        (
            "ATTACHMENT_WHISPER_API_KEY_PARAM",
            "AttachmentWhisperApiKeyParameter",
            "UseWhisper",
            tuple(FUNCTIONS),
        ),
    ],
)
def test_a_secrets_reference_goes_only_where_the_configuration_uses_it(
    template, variable, parameter, used_when, functions
):
    for logical_id in FUNCTIONS:
        given = env_of(template, logical_id).get(variable)
        if logical_id in functions:
            assert given == {"Fn::If": [used_when, {"Ref": parameter}, {"Ref": "AWS::NoValue"}]}, logical_id
        else:
            assert given is None, logical_id
    for logical_id in TURN_FUNCTIONS:
        env = env_of(template, logical_id)
        assert env["MODEL_STRATEGY"] == {"Ref": "ModelStrategy"}
        assert env["ALLOW_ANONYMOUS"] == {"Ref": "AllowAnonymous"}


def test_parameters(template):
    params = template["Parameters"]
    for name in ("Stage", "JwtIssuer", "JwtAudience", "ChromaUrl", "ModelStrategy", "LogRetentionDays"):
        assert name in params, name
    assert params["Stage"]["AllowedValues"] == ["dev", "prod"]
    assert params["ModelStrategy"]["Default"] == "deepseek_single"
    for parameter in SECRET_PARAMETERS.values():
        assert params[parameter]["Default"].startswith("/rag-orchestrator/"), parameter
    # TRACE switches the sanitized reasoning traces on ([thinking][audit], level 5).
    assert "TRACE" in params["LogLevel"]["AllowedValues"]
    assert params["AllowAnonymous"]["Default"] == "false"
    assert params["AllowAnonymous"]["AllowedValues"] == ["true", "false"]


def test_chat_stream_runs_behind_the_lambda_web_adapter_with_a_streaming_url(template):
    props = effective_function(template, "ChatStreamFunction")
    env = env_of(template, "ChatStreamFunction")
    assert props["Handler"] == "run.sh"
    assert env["AWS_LAMBDA_EXEC_WRAPPER"] == "/opt/bootstrap"
    assert env["AWS_LWA_INVOKE_MODE"] == "response_stream"
    assert str(env["PORT"]) == "8000"
    # Readiness must not depend on DynamoDB/S3/Chroma being up (health answers 503 then).
    assert env["AWS_LWA_READINESS_CHECK_PATH"] == "/api/v1/agent/ping"
    adapter = [layer for layer in props["Layers"] if "LambdaAdapterLayer" in json.dumps(layer)]
    assert len(adapter) == 1, props["Layers"]  # resolved per partition: test_template_settings.py
    url = props["FunctionUrlConfig"]
    assert url["InvokeMode"] == "RESPONSE_STREAM"
    assert url["AuthType"] == "NONE"  # the app verifies the JWT itself (AUTH_MODE=jwt)
    # ... so every unauthenticated request is an invocation: a parameter caps how many run at once.
    assert props["ReservedConcurrentExecutions"] == {
        "Fn::If": ["CapStreamConcurrency", {"Ref": "ChatStreamReservedConcurrency"}, {"Ref": "AWS::NoValue"}]
    }
    assert props["Timeout"] == 300
    assert props["MemorySize"] == 512  # chosen by bench/cost.py's measurement (docs/cost.md)


def test_only_chat_stream_uses_the_adapter(template):
    for logical_id in set(FUNCTIONS) - {"ChatStreamFunction"}:
        env = env_of(template, logical_id)
        assert "AWS_LAMBDA_EXEC_WRAPPER" not in env, logical_id
        assert "LambdaAdapterLayer" not in json.dumps(effective_function(template, logical_id)["Layers"])


# ---------------------------------------------------------------- HTTP API


def test_http_api_has_a_default_jwt_authorizer(resources):
    api = resources["HttpApi"]
    assert api["Type"] == "AWS::Serverless::HttpApi"
    auth = api["Properties"]["Auth"]
    name = auth["DefaultAuthorizer"]
    authorizer = auth["Authorizers"][name]
    assert authorizer["IdentitySource"] == "$request.header.Authorization"
    assert authorizer["JwtConfiguration"]["issuer"] == {"Ref": "JwtIssuer"}
    assert {"Ref": "JwtAudience"} in authorizer["JwtConfiguration"]["audience"]
    assert "CorsConfiguration" in api["Properties"]


def test_api_routes_public_ones_and_guests_without_the_authorizer_everything_else_with_jwt(resources):
    """A guest token is the service's own (HS256), which the JWT authorizer would refuse: the guest
    route and the routes a guest uses skip it, and the app verifies every token there itself."""
    events = resources["ApiFunction"]["Properties"]["Events"]
    routes = {}
    for event in events.values():
        assert event["Type"] == "HttpApi"
        props = event["Properties"]
        assert props["ApiId"] == {"Ref": "HttpApi"}
        routes[(props["Method"].upper(), props["Path"])] = props.get("Auth", {}).get("Authorizer")
    public = {
        ("GET", "/api/v1/agent/health"),
        ("GET", "/api/v1/agent/ping"),
        ("GET", "/docs"),
        ("GET", "/openapi.json"),
        ("POST", "/api/v1/auth/guest"),
        ("GET", "/.well-known/jwks.json"),
        ("ANY", "/api/v1/chat/{proxy+}"),
        ("GET", "/api/v1/agent/tools"),
        ("POST", "/mcp"),
        ("DELETE", "/api/v1/me"),  # a guest erases itself
        ("ANY", "/api/v1/me/{proxy+}"),  # and exports its data
        ("GET", "/api/v1/shared/{shareId}"),  # a share's link, read with no token
    }
    for route in public:
        assert routes.get(route) == "NONE", route
    assert ("ANY", "/{proxy+}") in routes
    assert routes[("ANY", "/{proxy+}")] is None  # the default: the JWT authorizer
    assert {r for r, a in routes.items() if a == "NONE"} == public


# ---------------------------------------------------------------- storage


def test_conversations_table(resources):
    table = resources["ConversationsTable"]
    assert table["Type"] == "AWS::DynamoDB::Table"
    props = table["Properties"]
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert props["SSESpecification"]["SSEEnabled"] is True
    assert props["TimeToLiveSpecification"] == {"AttributeName": "expiresAt", "Enabled": True}
    assert props["KeySchema"] == [
        {"AttributeName": "PK", "KeyType": "HASH"},
        {"AttributeName": "SK", "KeyType": "RANGE"},
    ]
    attributes = {a["AttributeName"]: a["AttributeType"] for a in props["AttributeDefinitions"]}
    assert attributes == {
        "PK": "S",
        "SK": "S",
        "GSI1PK": "S",
        "GSI1SK": "S",
        "GSI3PK": "S",
        "GSI3SK": "S",
    }
    indexes = {i["IndexName"]: i for i in props["GlobalSecondaryIndexes"]}
    assert set(indexes) == {"ByCaller", "ByArchive"}
    for name, (hash_key, range_key) in {
        "ByCaller": ("GSI1PK", "GSI1SK"),
        "ByArchive": ("GSI3PK", "GSI3SK"),
    }.items():
        assert indexes[name]["KeySchema"] == [
            {"AttributeName": hash_key, "KeyType": "HASH"},
            {"AttributeName": range_key, "KeyType": "RANGE"},
        ], name
    assert indexes["ByCaller"]["Projection"] == {"ProjectionType": "ALL"}
    archive = indexes["ByArchive"]["Projection"]
    assert archive["ProjectionType"] == "INCLUDE"
    assert set(archive["NonKeyAttributes"]) == {"callerId", "lastMessageAt", "updatedAt", "status"}


def test_table_definition_is_plain_for_the_dev_server(resources):
    """The dev server creates the table in moto from this definition: no intrinsics in it."""
    props = resources["ConversationsTable"]["Properties"]
    for key in ("KeySchema", "AttributeDefinitions", "GlobalSecondaryIndexes", "BillingMode"):
        dumped = json.dumps(props[key])
        assert '"Fn::' not in dumped and '"Ref"' not in dumped, key


@pytest.mark.parametrize("bucket", ["TranscriptsBucket", "DocumentsBucket", "AttachmentsBucket"])
def test_buckets_are_encrypted_private_and_tls_only(resources, bucket):
    props = resources[bucket]["Properties"]
    sse = props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"]
    assert sse["SSEAlgorithm"] in {"AES256", "aws:kms", "aws:kms:dsse"}
    assert props["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    policies = [
        r
        for r in resources.values()
        if r["Type"] == "AWS::S3::BucketPolicy" and r["Properties"]["Bucket"] == {"Ref": bucket}
    ]
    assert len(policies) == 1, bucket
    denies = [
        s
        for s in as_list(policies[0]["Properties"]["PolicyDocument"]["Statement"])
        if s["Effect"] == "Deny"
        and s.get("Condition", {}).get("Bool", {}).get("aws:SecureTransport") in ("false", False)
    ]
    assert denies, f"{bucket} has no TLS-only deny statement"
    resources_denied = json.dumps(denies[0]["Resource"])
    assert bucket in resources_denied and "/*" in resources_denied


def test_documents_versioned_and_transcripts_lifecycle(resources):
    assert resources["DocumentsBucket"]["Properties"]["VersioningConfiguration"]["Status"] == "Enabled"
    rules = resources["TranscriptsBucket"]["Properties"]["LifecycleConfiguration"]["Rules"]
    transitions = [t for r in rules if r["Status"] == "Enabled" for t in r.get("Transitions", [])]
    assert {t["StorageClass"] for t in transitions} >= {"STANDARD_IA"}


@pytest.mark.parametrize(
    ("bucket", "variable"),
    [("DocumentsBucket", "DOCUMENTS_BUCKET"), ("AttachmentsBucket", "ATTACHMENTS_BUCKET")],
)
def test_notifying_bucket_names_match_what_the_functions_are_given(template, resources, bucket, variable):
    """These names are built from parameters (a !Ref would be a circular dependency via the S3
    notification); each must be the name the bucket really gets."""
    name = resources[bucket]["Properties"]["BucketName"]
    for logical_id in FUNCTIONS:
        assert env_of(template, logical_id)[variable] == name, logical_id


def test_attachments_bucket_takes_browser_uploads_from_the_app_origin_only(resources):
    (rule,) = resources["AttachmentsBucket"]["Properties"]["CorsConfiguration"]["CorsRules"]
    assert rule["AllowedOrigins"] == [{"Ref": "CorsAllowOrigin"}]
    assert rule["AllowedMethods"] == ["POST"]
    rules = resources["AttachmentsBucket"]["Properties"]["LifecycleConfiguration"]["Rules"]
    assert any(r.get("Prefix") == "transcribe/" and r.get("ExpirationInDays") for r in rules)


def test_only_the_api_may_put_attachments_and_only_the_functions_that_read_them_may_get_them(resources):
    """A presigned POST is authorized as its signer (the API), a presigned GET too (the function running
    the turn whose HTTP tool gets it); AttachmentFunction and turns read files to process them."""
    for logical_id in FUNCTIONS:
        actions = {action for action, _ in attachment_grants(resources, logical_id, "/attachments/*")}
        expected = {
            "ApiFunction": {"s3:PutObject", "s3:GetObject"},
            "ChatStreamFunction": {"s3:GetObject"},
            "AttachmentFunction": {"s3:GetObject"},
        }.get(logical_id, set())
        assert actions == expected, logical_id


def attachment_grants(resources: dict, logical_id: str, prefix: str) -> list[tuple[str, str]]:
    """(action, resource) of every statement of the function on the attachments bucket under `prefix`."""
    return [
        (action, json.dumps(statement["Resource"]))
        for statement in policy_statements(resources[logical_id]["Properties"].get("Policies", []))
        for action in as_list(statement["Action"])
        if "-attachments-" in json.dumps(statement["Resource"])
        and prefix in json.dumps(statement["Resource"])
    ]


def inline_policies(resources: dict, logical_id: str) -> list[dict]:
    return [p for p in resources[logical_id]["Properties"].get("Policies", []) if "Statement" in p]


def managed_policies(resources: dict, logical_id: str) -> list[str]:
    """The template's own managed policies a function is given (`!Ref` to an AWS::IAM::ManagedPolicy)."""
    return [p["Ref"] for p in resources[logical_id]["Properties"].get("Policies", []) if "Ref" in p]


def function_statements(resources: dict, logical_id: str) -> list[dict]:
    """Every statement that may grant a function something: its inline ones and those of the managed
    policies it is given; both branches of a conditional one."""
    documents = inline_policies(resources, logical_id) + [
        resources[name]["Properties"]["PolicyDocument"] for name in managed_policies(resources, logical_id)
    ]
    return list(policy_statements(documents))


def referenced_parameters(node: Any) -> set[str]:
    """The parameters an expression refers to: `!Ref X`, or `${X}` in a `!Sub`."""
    found = set()
    for item in walk(node):
        if isinstance(item, dict) and isinstance(item.get("Ref"), str):
            found.add(item["Ref"])
        if isinstance(item, dict) and "Fn::Sub" in item:
            text, own = (item["Fn::Sub"], {}) if isinstance(item["Fn::Sub"], str) else item["Fn::Sub"]
            found |= set(re.findall(r"\$\{([A-Za-z0-9]+)\}", text)) - set(own)
    return found


def readable_secrets(resources: dict, logical_id: str) -> set[str]:
    """The parameters naming what a function may read from SSM or Secrets Manager."""
    return {
        name
        for statement in function_statements(resources, logical_id)
        if {"ssm:GetParameter", "secretsmanager:GetSecretValue"} & set(as_list(statement["Action"]))
        for name in referenced_parameters(statement["Resource"])
        if not name.startswith("AWS::")
    }


@pytest.mark.parametrize("logical_id", ["ApiFunction", "ChatStreamFunction", "AttachmentFunction"])
def test_the_functions_that_read_attachments_may_call_textract_and_transcribe_only_when_configured(
    resources, logical_id
):
    """A turn reads an attachment no S3 event has reached yet as AttachmentFunction would: the same
    engines, granted under the same conditions, and the caption and Whisper keys."""
    statements = [
        s for policy in inline_policies(resources, logical_id) for s in as_list(policy["Statement"])
    ]
    conditional = {
        action.split(":")[0]: node["Fn::If"][0]
        for node in statements
        if isinstance(node, dict) and "Fn::If" in node
        for action in as_list(node["Fn::If"][1]["Action"])
    }
    assert conditional["textract"] == "UseTextract" and conditional["transcribe"] == "UseTranscribe"
    unconditional = {a for s in statements if "Fn::If" not in s for a in as_list(s["Action"])}
    assert not {a for a in unconditional if a.startswith(("textract:", "transcribe:"))}
    assert {"s3:PutObject", "s3:GetObject", "s3:DeleteObject"} == {
        action for action, _ in attachment_grants(resources, logical_id, "/transcribe/*")
    }
    readable = readable_secrets(resources, logical_id)
    assert {"AttachmentCaptionApiKeyParameter", "AttachmentWhisperApiKeyParameter"} <= readable, logical_id


def test_attachment_function_may_index_segments_in_conversation_memory(resources):
    assert {"ChromaTokenParameter", "EmbeddingApiKeyParameter"} <= readable_secrets(
        resources, "AttachmentFunction"
    )
    statements = function_statements(resources, "AttachmentFunction")
    assert any("bedrock:InvokeModel" in as_list(s["Action"]) for s in statements)


# ---------------------------------------------------------------- events, async failures, logs


def test_archive_runs_on_its_schedule_hourly_by_default(template, resources):
    props = resources["ArchiveFunction"]["Properties"]
    schedules = [e for e in props["Events"].values() if e["Type"] in ("Schedule", "ScheduleV2")]
    assert len(schedules) == 1
    assert schedules[0]["Properties"]["Schedule"] == {"Ref": "ArchiveSchedule"}
    assert template["Parameters"]["ArchiveSchedule"]["Default"] == "rate(1 hour)"
    assert effective_function(template, "ArchiveFunction")["Timeout"] == 900
    # the purge deletes fragments from Chroma, which may need its token
    assert readable_secrets(resources, "ArchiveFunction") == {"ChromaTokenParameter"}


def test_attachment_function_is_notified_of_uploads(template, resources):
    props = resources["AttachmentFunction"]["Properties"]
    (event,) = props["Events"].values()
    assert event["Type"] == "S3"
    assert event["Properties"]["Bucket"] == {"Ref": "AttachmentsBucket"}
    assert {"Name": "prefix", "Value": "attachments/"} in event["Properties"]["Filter"]["S3Key"]["Rules"]
    assert effective_function(template, "AttachmentFunction")["Timeout"] == 300


def test_ingest_is_notified_of_new_documents(template, resources):
    props = resources["IngestFunction"]["Properties"]
    (event,) = props["Events"].values()
    assert event["Type"] == "S3"
    assert event["Properties"]["Bucket"] == {"Ref": "DocumentsBucket"}
    assert event["Properties"]["Events"] in ("s3:ObjectCreated:*", ["s3:ObjectCreated:*"])
    rules = event["Properties"]["Filter"]["S3Key"]["Rules"]
    assert {"Name": "prefix", "Value": "documents/"} in rules
    assert effective_function(template, "IngestFunction")["Timeout"] == 300


@pytest.mark.parametrize(
    "logical_id", ["ArchiveFunction", "IngestFunction", "AttachmentFunction", "LifecycleFunction"]
)
def test_async_functions_send_failures_to_an_encrypted_queue(resources, logical_id):
    properties = resources[logical_id]["Properties"]
    if "EventInvokeConfig" in properties:
        config = properties["EventInvokeConfig"]
    else:  # a stream's event source: its own retries and failure destination
        (event,) = properties["Events"].values()
        config = event["Properties"]
    assert config["MaximumRetryAttempts"] == 2
    on_failure = config["DestinationConfig"]["OnFailure"]
    assert on_failure["Type"] == "SQS"
    queue_id, attribute = on_failure["Destination"]["Fn::GetAtt"]
    assert attribute == "Arn"
    queue = resources[queue_id]
    assert queue["Type"] == "AWS::SQS::Queue"
    assert queue["Properties"].get("SqsManagedSseEnabled") is True or "KmsMasterKeyId" in queue["Properties"]


def test_each_function_has_a_log_group_with_retention(resources):
    groups = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::Logs::LogGroup"]
    names = {json.dumps(g["LogGroupName"]): g for g in groups}
    for logical_id in FUNCTIONS:
        key = json.dumps({"Fn::Sub": f"/aws/lambda/${{{logical_id}}}"})
        assert key in names, f"no log group for {logical_id}"
        assert names[key]["RetentionInDays"] == {"Ref": "LogRetentionDays"}


def test_outputs(template):
    outputs = template["Outputs"]
    for name in (
        "ApiUrl",
        "StreamUrl",
        "ConversationsTableName",
        "TranscriptsBucketName",
        "DocumentsBucketName",
        "AttachmentsBucketName",
    ):
        assert name in outputs, name
    assert outputs["StreamUrl"]["Value"] == {"Fn::GetAtt": ["ChatStreamFunctionUrl", "FunctionUrl"]}


# ---------------------------------------------------------------- least privilege


def test_no_wildcard_actions_in_the_template(template):
    """No statement that grants anything uses a wildcard action (or NotAction). A Deny with
    s3:* (the TLS-only guard of the bucket policies) grants nothing and is allowed."""
    offenders = []
    for statement in policy_statements(template):
        if statement.get("Effect") == "Deny":
            continue
        if wildcard_actions(statement) or "NotAction" in statement:
            offenders.append(statement)
    assert not offenders, json.dumps(offenders, indent=1)


def test_function_policies_are_spelled_out_here(resources):
    """No AWS managed policies or SAM policy templates: every grant is an inline statement or one of this
    template's own managed policies."""
    for logical_id in FUNCTIONS:
        for policy in resources[logical_id]["Properties"].get("Policies", []):
            assert isinstance(policy, dict) and set(policy) in ({"Statement"}, {"Ref"}), (logical_id, policy)
        for name in managed_policies(resources, logical_id):
            assert resources[name]["Type"] == "AWS::IAM::ManagedPolicy", (logical_id, name)


def test_ingest_records_documents_and_archive_keeps_audit_trails(resources):
    """The IngestFunction writes the document registry; the archival job reads and writes AUDIT$ items."""
    table = {"Fn::GetAtt": ["ConversationsTable", "Arn"]}
    ingest = [
        s for s in function_statements(resources, "IngestFunction") if s.get("Sid") == "DocumentRegistry"
    ]
    assert [(as_list(s["Action"]), s["Resource"]) for s in ingest] == [(["dynamodb:PutItem"], table)]
    (archive,) = [
        s for s in function_statements(resources, "ArchiveFunction") if s.get("Sid") == "ConversationsTable"
    ]
    assert {"dynamodb:GetItem", "dynamodb:PutItem"} <= set(as_list(archive["Action"]))


# Which secrets each function may read: those it uses, no others (the tool catalogue and the MCP
# servers' document too, when they are SSM parameters).
TURNS = ("CursorSecretParameter", "ToolSecretsPrefix", "ToolCatalog", "McpServers")
READS = {
    "ApiFunction": {*SECRET_PARAMETERS.values(), *TURNS},
    "ChatStreamFunction": {*SECRET_PARAMETERS.values(), *TURNS},
    "ArchiveFunction": {"ChromaTokenParameter"},
    "LifecycleFunction": {"ChromaTokenParameter"},
    "IngestFunction": {"ChromaTokenParameter", "EmbeddingApiKeyParameter"},
    "AttachmentFunction": {
        "ChromaTokenParameter",
        "EmbeddingApiKeyParameter",
        "AttachmentCaptionApiKeyParameter",
        "AttachmentWhisperApiKeyParameter",
    },
}


@pytest.mark.parametrize("logical_id", list(FUNCTIONS))
def test_secrets_access_is_scoped_to_the_named_secrets(resources, logical_id):
    """The named secrets, the tool catalogue's and MCP servers' parameters, and the tool secrets' prefix;
    read, decrypted only through SSM or Secrets Manager."""
    assert readable_secrets(resources, logical_id) == READS[logical_id]
    for statement in function_statements(resources, logical_id):
        actions = set(as_list(statement["Action"]))
        if any(a.startswith(("ssm:", "secretsmanager:")) for a in actions):
            assert actions <= {"ssm:GetParameter", "ssm:GetParameters", "secretsmanager:GetSecretValue"}
        if "kms:Decrypt" in actions:
            assert actions == {"kms:Decrypt"}
            via = statement["Condition"]["StringEquals"]["kms:ViaService"]
            assert via == [
                {"Fn::Sub": "ssm.${AWS::Region}.${AWS::URLSuffix}"},
                {"Fn::Sub": "secretsmanager.${AWS::Region}.${AWS::URLSuffix}"},
            ], logical_id


TRANSFORM_SCRIPT = r"""
import json, sys
from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse

template = yaml_parse(open(sys.argv[1]).read())
for resource in template["Resources"].values():
    for key in ("CodeUri", "ContentUri"):
        if isinstance(resource.get("Properties", {}).get(key), str):
            resource["Properties"][key] = "s3://bucket/key"

class NoManagedPolicies:
    def load(self):
        return {}

print(json.dumps(transform(template, {}, NoManagedPolicies())))
"""


@pytest.fixture(scope="module")
def transformed(tmp_path_factory) -> dict[str, Any]:
    """The template as the AWS::Serverless transform turns it into CloudFormation."""
    sam_python = require_sam().parent / "python"
    assert sam_python.exists(), f"no python beside {sam_cli()}: run `bash devserver/bootstrap.sh sam`"
    proc = subprocess.run(
        [str(sam_python), "-c", TRANSFORM_SCRIPT, str(TEMPLATE)],
        env=sam_env(tmp_path_factory.mktemp("sam-app-dir")),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_guests_reach_the_app_past_api_gateway_after_the_sam_transform(transformed):
    """As deployed: the routes a guest token travels have no authorizer; every other route keeps it."""
    paths = transformed["Resources"]["HttpApi"]["Properties"]["Body"]["paths"]
    any_method = "x-amazon-apigateway-any-method"
    assert paths["/{proxy+}"][any_method]["security"] == [{"JwtAuthorizer": []}]
    for path, method in (
        ("/api/v1/auth/guest", "post"),
        ("/.well-known/jwks.json", "get"),
        ("/api/v1/chat/{proxy+}", any_method),
        ("/api/v1/agent/tools", "get"),
        ("/mcp", "post"),
        ("/api/v1/me", "delete"),  # a guest erases itself with its own token
        ("/api/v1/me/{proxy+}", any_method),  # and exports
        ("/api/v1/shared/{shareId}", "get"),  # a share is read with no token at all
    ):
        assert paths[path][method]["security"] == [{"NONE": []}], path
    assert "/api/v1/documents" not in paths and "/api/v1/admin/audit" not in paths  # behind the authorizer
    assert not any(path.startswith("/api/v1/admin") for path in paths)  # erasing others: the authorizer too


def test_no_wildcard_actions_after_the_sam_transform(transformed):
    """The roles SAM generates (event-invoke destinations, URL permissions...) stay least-privilege."""
    roles = {k: v for k, v in transformed["Resources"].items() if v["Type"] == "AWS::IAM::Role"}
    assert {f"{f}Role" for f in FUNCTIONS} <= set(roles)
    for logical_id, role in roles.items():
        for policy in role["Properties"].get("Policies", []):
            for statement in policy_statements(policy["PolicyDocument"]):
                assert statement["Effect"] != "Allow" or not wildcard_actions(statement), (
                    logical_id,
                    statement,
                )
                assert "NotAction" not in statement, (logical_id, statement)
        managed = {
            json.dumps(a) if not isinstance(a, str) else a
            for a in role["Properties"].get("ManagedPolicyArns", [])
        }
        own = {json.dumps({"Ref": name}) for name in OWN_MANAGED_POLICIES}
        assert managed <= ALLOWED_MANAGED_POLICIES | own, (logical_id, managed)
    for resource in transformed["Resources"].values():
        if resource["Type"] == "AWS::IAM::Policy":
            for statement in policy_statements(resource["Properties"]["PolicyDocument"]):
                assert statement["Effect"] != "Allow" or not wildcard_actions(statement), statement


# ---------------------------------------------------------------- sample events


def test_sample_events_are_realistic():
    events = REPO / "events"
    health = json.loads((events / "api_health.json").read_text())
    assert health["version"] == "2.0"
    assert health["requestContext"]["http"] == health["requestContext"]["http"] | {
        "method": "GET",
        "path": "/api/v1/agent/health",
    }

    create = json.loads((events / "api_create_conversation.json").read_text())
    assert create["version"] == "2.0"
    assert create["requestContext"]["http"]["method"] == "POST"
    assert create["rawPath"] == "/api/v1/chat/conversations"
    claims = create["requestContext"]["authorizer"]["jwt"]["claims"]
    assert claims["sub"] and "cognito:groups" in claims
    assert isinstance(json.loads(create["body"]), dict)

    stream = json.loads((events / "stream_turn.json").read_text())
    assert stream["version"] == "2.0" and stream["routeKey"] == "$default"
    assert ".lambda-url." in stream["requestContext"]["domainName"]
    assert stream["requestContext"]["http"]["method"] == "POST"
    assert stream["rawPath"].startswith("/api/v1/chat/conversations/")
    assert stream["rawPath"].endswith("/messages/stream")
    assert json.loads(stream["body"])["message"]

    schedule = json.loads((events / "schedule.json").read_text())
    assert schedule["detail-type"] == "Scheduled Event" and schedule["source"] == "aws.events"

    put = json.loads((events / "s3_put.json").read_text())
    (record,) = put["Records"]
    assert record["eventSource"] == "aws:s3" and record["eventName"] == "ObjectCreated:Put"
    assert record["s3"]["bucket"]["name"] == "rag-orchestrator-documents-local"
    assert record["s3"]["object"]["key"] == "documents/guide.md"

    attachment = json.loads((events / "s3_attachment.json").read_text())
    (record,) = attachment["Records"]
    assert record["eventName"].startswith("ObjectCreated:")
    assert record["s3"]["bucket"]["name"] == "rag-orchestrator-attachments-local"
    assert record["s3"]["object"]["key"].startswith("attachments/alice/")


def test_snapstart_is_an_option_of_the_functions_whose_hooks_run(template, resources):
    parameter = template["Parameters"]["SnapStart"]
    assert parameter["Default"] == "None" and parameter["AllowedValues"] == ["None", "PublishedVersions"]
    with_snapstart = {"ApiFunction", "ArchiveFunction", "IngestFunction", "LifecycleFunction"}
    for logical_id in FUNCTIONS:
        props = effective_function(template, logical_id)
        if logical_id in with_snapstart:
            assert props["SnapStart"] == {"ApplyOn": {"Ref": "SnapStart"}}, logical_id
            assert props["AutoPublishAlias"] == "live", logical_id  # SnapStart needs published versions
            code = (REPO / props["CodeUri"] / "app.py").read_text()
            assert "snapstart.register(" in code, logical_id
        else:
            assert "SnapStart" not in props, logical_id


def test_erasures_run_in_a_function_of_their_own_handed_over_on_the_tables_stream(template, resources):
    api = effective_function(template, "ApiFunction")
    assert not any("LIFECYCLE" in name for name in api["Environment"]["Variables"])  # no name passes
    table = template["Resources"]["ConversationsTable"]["Properties"]
    assert table["StreamSpecification"] == {"StreamViewType": "KEYS_ONLY"}
    lifecycle = template["Resources"]["LifecycleFunction"]["Properties"]
    (event,) = lifecycle["Events"].values()
    assert event["Type"] == "DynamoDB"
    assert event["Properties"]["Stream"] == {"Fn::GetAtt": ["ConversationsTable", "StreamArn"]}
    assert event["Properties"]["MaximumRetryAttempts"] >= 1  # a stopped erasure runs again and resumes
    failure = event["Properties"]["DestinationConfig"]["OnFailure"]
    assert failure["Destination"] == {"Fn::GetAtt": ["LifecycleFailureQueue", "Arn"]}
    (pattern,) = [json.loads(f["Pattern"]) for f in event["Properties"]["FilterCriteria"]["Filters"]]
    assert pattern == {"eventName": ["INSERT"], "dynamodb": {"Keys": {"SK": {"S": [{"prefix": "RUN#"}]}}}}
    assert effective_function(template, "LifecycleFunction")["Timeout"] == 900  # beyond API Gateway's 29 s


def test_retrieval_parameters_offer_the_modes_and_rerankers(template):
    params = template["Parameters"]
    assert params["RetrievalMode"]["AllowedValues"] == ["hybrid", "dense", "lexical"]
    assert params["RetrievalMode"]["Default"] == "hybrid"
    assert (
        params["Reranker"]["AllowedValues"] == ["local", "http", "none"]
        and params["Reranker"]["Default"] == "local"
    )
    rule = template["Rules"]["HttpRerankerNeedsUrl"]
    assert rule["RuleCondition"] == {"Fn::Equals": [{"Ref": "Reranker"}, "http"]}
