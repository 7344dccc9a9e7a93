"""Every setting an operator needs is a template parameter, as docs/configuration.md's last column says;
secrets from SSM or Secrets Manager with grants for either; the Web Adapter layer per partition and
region; the template clean under cfn-lint in the aws, aws-cn and aws-us-gov partitions.

The configuration page's table is parsed: each row's variables, the parameter of each (or `–`), and the
functions that read them. The template is evaluated (tests/packaging/intrinsics.py) on the values an
operator would give. A numeric parameter's range is its field's in config.py, so no value the template
accepts stops the functions' start.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any, NamedTuple

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from devserver.cfn_yaml import load_template  # noqa: E402
from devserver.sam_cli import sam_cli  # noqa: E402
from tests.packaging.intrinsics import NO_VALUE, Deployment  # noqa: E402
from tests.packaging.test_template import FUNCTIONS, READS, as_list, env_of, referenced_parameters  # noqa: E402

DOC = REPO / "docs" / "configuration.md"
SHORT_NAMES = {
    "api": "ApiFunction",
    "stream": "ChatStreamFunction",
    "archive": "ArchiveFunction",
    "ingest": "IngestFunction",
    "attachments": "AttachmentFunction",
    "lifecycle": "LifecycleFunction",
}
SECRETS = [
    "DeepSeekApiKeyParameter",
    "QwenApiKeyParameter",
    "OpenAICompatibleApiKeyParameter",
    "ChromaTokenParameter",
    "EmbeddingApiKeyParameter",
    "GuestTokenSecretParameter",
    "AttachmentCaptionApiKeyParameter",
    "AttachmentWhisperApiKeyParameter",
    "CursorSecretParameter",
]
REQUIRED = {
    "JwtIssuer": "https://cognito-idp.eu-central-1.amazonaws.com/eu-central-1_AbCdEfGhI",
    "JwtAudience": "4k2example0app0client0id0abc",
    "ChromaUrl": "https://chroma.internal.example.com:8000",
}


class Setting(NamedTuple):
    variable: str
    parameter: str
    functions: tuple[str, ...]


def documented_settings() -> list[Setting]:
    """(variable, parameter, functions) for every variable the page gives a template parameter."""
    settings = []
    for line in DOC.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[0].startswith("`"):
            continue
        variables = re.findall(r"`([A-Z0-9_]+)`", cells[0])
        column, _, scope = cells[3].partition("(")
        parameters = [p.strip().strip("`") for p in column.split(",")]
        assert len(parameters) == len(variables), f"one parameter or – per variable: {line}"
        functions = (
            tuple(SHORT_NAMES[f.strip()] for f in scope.rstrip(")").split(",")) if scope else FUNCTIONS
        )
        settings += [
            Setting(v, p, tuple(functions)) for v, p in zip(variables, parameters, strict=True) if p != "–"
        ]
    return settings


SETTINGS = documented_settings()


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template(REPO / "template.yaml")


def variable_of(setting: Setting) -> str:
    """The variable the template sets: a secret's is `<NAME>_PARAM`, naming where it is."""
    from rag_orchestrator.config import SECRET_FIELDS

    secret = setting.variable.lower() in SECRET_FIELDS
    return f"{setting.variable}_PARAM" if secret else setting.variable


# ---------------------------------------------------------------- the settings an operator sets


def test_the_page_marks_the_settings_the_issue_names():
    marked = {s.variable for s in SETTINGS}
    assert {
        "KB_WRITER_ROLES",
        "GUEST_TTL_HOURS",
        "AUDIT_RETENTION_DAYS",
        "TURN_STOP_ON_DISCONNECT",
        "TOOL_SELECTION_MIN_SCORE",
        "ATTACHMENT_TRANSCRIBE_LANGUAGE",
        "DEEPSEEK_THINKING",
        "DEEPSEEK_BASE_URL",
        "QWEN_BASE_URL",
        "OPENAI_COMPATIBLE_BASE_URL",
        "MODEL_TIMEOUT_SECONDS",
        "MODEL_MAX_TOKENS",
        "MODEL_MAX_RETRIES",
        "MODEL_TEMPERATURE",
    } <= marked
    assert len(SETTINGS) >= 80


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.variable)
def test_each_marked_setting_is_a_parameter_that_reaches_the_functions_that_read_it(template, setting):
    assert setting.parameter in template["Parameters"], setting
    for fn in setting.functions:
        value = env_of(template, fn).get(variable_of(setting))
        assert setting.parameter in referenced_parameters(value), (fn, variable_of(setting), value)


def test_every_parameter_that_reaches_a_function_is_on_the_page(template):
    """The other direction: no setting is a parameter the page does not mark (Stage names resources)."""
    marked = {s.parameter for s in SETTINGS}
    for fn in FUNCTIONS:
        for variable, value in env_of(template, fn).items():
            unmarked = referenced_parameters(value) & set(template["Parameters"]) - marked - {"Stage"}
            assert not unmarked, (fn, variable, unmarked)


def test_every_parameters_default_is_a_value_it_accepts(template):
    for name, parameter in template["Parameters"].items():
        if "Default" not in parameter:
            continue
        default = str(parameter["Default"])
        assert re.fullmatch(parameter.get("AllowedPattern", ".*"), default), name
        assert default in [str(v) for v in parameter.get("AllowedValues", [default])], name


# Settings read only with another's choice, and passed only with it.
READ_ONLY_WITH = {"RerankerUrl": {"Reranker": "http"}, "RerankerModel": {"Reranker": "http"}}


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.variable)
def test_a_blank_parameter_passes_no_variable_and_a_given_one_passes_its_value(template, setting):
    """So the app's own default applies: an empty variable is never set."""
    if template["Parameters"][setting.parameter].get("Default") != "":
        return
    choice = READ_ONLY_WITH.get(setting.parameter, {})
    blank = Deployment(template, choice)
    given = Deployment(template, {**choice, setting.parameter: "/given/value"})
    for fn in setting.functions:
        value = env_of(template, fn)[variable_of(setting)]
        assert blank.value(value) is NO_VALUE, (fn, setting)
        assert "/given/value" in given.value(value), (fn, setting)


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.variable)
def test_a_parameters_default_is_the_apps(template, monkeypatch, setting):
    """A non-blank default is a valid setting; a blank one's description names the app's default."""
    from rag_orchestrator.config import Settings, load_settings

    parameter = template["Parameters"][setting.parameter]
    default = str(parameter.get("Default", ""))
    field = setting.variable.lower()
    if default and field in Settings.model_fields and setting.variable != "LOG_LEVEL":
        monkeypatch.setenv(setting.variable, default)
        monkeypatch.setenv("EMBEDDING_PROVIDER", "hashing")  # bedrock needs AWS at start
        load_settings()
    said = re.search(r"\(blank - ([^;)\s]+)", parameter.get("Description", ""))
    if not default and said and re.fullmatch(r"[0-9.]+|true|false|https?://\S+|[a-z]+-[a-z0-9-]+", said[1]):
        app_default = Settings.model_fields[field].default
        assert said[1] in (str(app_default), str(app_default).lower()) or float(said[1]) == app_default


# ---------------------------------------------------------------- numbers: the template's range is the app's


def bounds_of(variable: str) -> dict[str, Decimal]:
    """The range Settings gives the variable's field (Field(ge=, le=, gt=, lt=), kept by pydantic as
    annotated_types metadata), as {"ge": ..., "le": ...}; {} for a field without one."""
    import annotated_types

    from rag_orchestrator.config import Settings

    field = Settings.model_fields.get(variable.lower())
    kinds = (annotated_types.Ge, annotated_types.Gt, annotated_types.Le, annotated_types.Lt)
    bounds = {}
    for constraint in field.metadata if field else ():
        for kind in kinds:
            if isinstance(constraint, kind):
                name = kind.__name__.lower()
                bounds[name] = Decimal(str(getattr(constraint, name)))
    return bounds


def is_integer(variable: str) -> bool:
    from rag_orchestrator.config import Settings

    return Settings.model_fields[variable.lower()].annotation in (int, int | None)


# Every documented setting whose field has a range: a field given bounds later is checked too.
BOUNDED = [s for s in SETTINGS if bounds_of(s.variable)]


def test_the_bounds_read_are_the_ones_the_settings_schema_states():
    """The metadata read above is all of each field's range (as the JSON schema of Settings states it)."""
    from rag_orchestrator.config import Settings

    keywords = {"minimum": "ge", "exclusiveMinimum": "gt", "maximum": "le", "exclusiveMaximum": "lt"}
    for name, schema in Settings.model_json_schema()["properties"].items():
        stated = {
            keywords[k]: Decimal(str(v))
            for part in [schema, *schema.get("anyOf", [])]
            for k, v in part.items()
            if k in keywords
        }
        assert bounds_of(name) == stated, name
    assert len(BOUNDED) > 20


def texts(value: Decimal, integer: bool) -> list[str]:
    """How a deployer writes the number: 60 also as 60.0 for a float setting."""
    if value != value.to_integral_value():
        return [format(value, "f")]
    whole = str(int(value))
    return [whole] if integer else [whole, f"{whole}.0"]


def probes(bounds: dict[str, Decimal], integer: bool) -> tuple[list[str], list[str]]:
    """The texts the app accepts (its bounds, values inside) and the nearest ones it refuses."""
    ge, gt, le, lt = (bounds.get(k) for k in ("ge", "gt", "le", "lt"))
    step = [Decimal(1)] if integer else [Decimal("0.5"), Decimal("0.001")]
    inside: list[Decimal] = []
    outside: list[Decimal] = []
    if ge is not None:
        inside.append(ge)
        outside += [ge - s for s in step]
    if gt is not None:
        inside += [gt + s for s in step]
        outside.append(gt)
    if le is not None:
        inside.append(le)
        outside += [le + s for s in step]
    if lt is not None:
        inside += [lt - s for s in step]
        outside.append(lt)
    low = ge if ge is not None else gt
    high = le if le is not None else lt
    if low is not None and high is not None:
        inside.append((low + high) // 2 if integer else (low + high) / 2)
    elif low is not None:
        inside.append(low + (10**6 if integer else Decimal("1000000.5")))
    else:
        assert high is not None
        inside.append(high - (10**6 if integer else Decimal("1000000.5")))
    return (
        [t for v in inside for t in texts(v, integer)],
        [t for v in outside for t in texts(v, integer)],
    )


def refusal(monkeypatch: pytest.MonkeyPatch, variable: str, text: str) -> str:
    """Why the app refuses to start with `variable=text` ("" when it starts)."""
    from rag_orchestrator.config import load_settings
    from rag_orchestrator.errors import ConfigError

    with monkeypatch.context() as scoped:
        scoped.setenv(variable, text)
        scoped.setenv("EMBEDDING_PROVIDER", "hashing")  # bedrock needs AWS at start
        try:
            load_settings()
        except ConfigError as error:
            return str(error)
    return ""


def refused_for_its_value(monkeypatch: pytest.MonkeyPatch, variable: str, text: str) -> bool:
    """Whether the app refuses the value itself: load_settings names the variable, `NAME: why`. (A
    combination with another setting, CHUNK_OVERLAP=2000 beside CHUNK_SIZE's 800, is no range of this one.)"""
    return bool(re.search(rf"\b{variable}: ", refusal(monkeypatch, variable, text)))


@pytest.mark.parametrize("setting", BOUNDED, ids=lambda s: s.variable)
def test_a_numeric_parameter_accepts_what_the_app_accepts_and_refuses_the_values_around_it(
    template, monkeypatch, setting
):
    """A value the template lets through but the app refuses deploys "successfully" and then every
    function that reads it refuses to start: the parameter's range is exactly the field's."""
    parameter = template["Parameters"][setting.parameter]
    bounds = bounds_of(setting.variable)
    integer = is_integer(setting.variable)
    if parameter["Type"] == "Number":
        # CloudFormation's MinValue/MaxValue are inclusive: an exclusive bound needs a String and a pattern.
        for key, inclusive, exclusive, nearest in (
            ("MinValue", "ge", "gt", Decimal(1)),
            ("MaxValue", "le", "lt", Decimal(-1)),
        ):
            if inclusive in bounds:
                expected = bounds[inclusive]
            elif exclusive in bounds:
                assert integer, f"{setting.parameter}: {exclusive} {bounds[exclusive]} needs a String"
                expected = bounds[exclusive] + nearest
            else:
                continue  # the app has no such bound: a narrower template refuses no start-up
            assert key in parameter and Decimal(str(parameter[key])) == expected, (setting.parameter, key)
            assert not refused_for_its_value(monkeypatch, setting.variable, str(parameter[key]))
        return
    pattern = parameter["AllowedPattern"]
    accepted, refused = probes(bounds, integer)
    for text in accepted:
        assert re.fullmatch(pattern, text), (setting.parameter, text, "is a value the app accepts")
        assert not refused_for_its_value(monkeypatch, setting.variable, text), (setting.variable, text)
    for text in refused:
        assert not re.fullmatch(pattern, text), (setting.parameter, text, "stops every function's start")
        assert refused_for_its_value(monkeypatch, setting.variable, text), (setting.variable, text)


# ---------------------------------------------------------------- secrets: SSM or Secrets Manager


@pytest.mark.parametrize(
    ("region", "reference", "action", "resource"),
    [
        (
            "us-east-1",
            "/rag/deepseek",
            "ssm:GetParameter",
            "arn:aws:ssm:us-east-1:123456789012:parameter/rag/deepseek",
        ),
        (
            "us-east-1",
            "/rag/keys#deepseek",
            "ssm:GetParameter",
            "arn:aws:ssm:us-east-1:123456789012:parameter/rag/keys",
        ),
        (
            "us-east-1",
            "secretsmanager:rag/deepseek",
            "secretsmanager:GetSecretValue",
            "arn:aws:secretsmanager:us-east-1:123456789012:secret:rag/deepseek-??????",
        ),
        (
            "us-east-1",
            "secretsmanager:rag/keys#deepseek",
            "secretsmanager:GetSecretValue",
            "arn:aws:secretsmanager:us-east-1:123456789012:secret:rag/keys-??????",
        ),
        (
            "us-east-1",
            "arn:aws:secretsmanager:eu-west-1:210987654321:secret:shared/keys-AbCdEf#deepseek",
            "secretsmanager:GetSecretValue",
            "arn:aws:secretsmanager:eu-west-1:210987654321:secret:shared/keys-AbCdEf",
        ),
        (
            "cn-north-1",
            "secretsmanager:rag/deepseek",
            "secretsmanager:GetSecretValue",
            "arn:aws-cn:secretsmanager:cn-north-1:123456789012:secret:rag/deepseek-??????",
        ),
        (
            "us-gov-west-1",
            "/rag/deepseek",
            "ssm:GetParameter",
            "arn:aws-us-gov:ssm:us-gov-west-1:123456789012:parameter/rag/deepseek",
        ),
    ],
)
@pytest.mark.parametrize("secret", SECRETS)
def test_a_secret_is_read_from_the_store_its_reference_names_and_only_there(
    template, secret, region, reference, action, resource
):
    from rag_orchestrator.ssm_params import SecretReference

    assert re.fullmatch(template["Parameters"][secret]["AllowedPattern"], reference)
    SecretReference.parse(reference)  # what the template accepts, the app reads
    deployment = Deployment(template, {secret: reference, "WebAdapterLayerArn": ADAPTER_ARN}, region)
    for fn in [fn for fn in FUNCTIONS if secret in READS[fn]]:
        found = [
            s for s in deployment.grants(fn) if s.get("Sid", "").startswith(secret.removesuffix("Parameter"))
        ]
        assert [(as_list(s["Action"]), s["Resource"]) for s in found] == [([action], resource)], fn
        decrypt = [s for s in deployment.grants(fn) if "kms:Decrypt" in as_list(s["Action"])]
        assert decrypt and all(s["Resource"].startswith(f"arn:{deployment.partition}:kms:") for s in decrypt)


@pytest.mark.parametrize(
    "reference", ["deepseek-key", "ssm:/rag/key", "secretsmanager:arn:aws:secretsmanager:x", "/rag/keys#a b"]
)
def test_a_reference_of_no_known_form_is_refused_at_deploy(template, reference):
    for secret in SECRETS:
        assert not re.fullmatch(template["Parameters"][secret]["AllowedPattern"], reference), secret


def test_the_rerank_key_is_passed_and_granted_only_with_the_http_reranker(template):
    local = Deployment(template)
    http = Deployment(
        template,
        {
            "Reranker": "http",
            "RerankerUrl": "https://api.cohere.com/v2/rerank",
            "RerankerApiKeyParameter": "secretsmanager:rag/rerank",
        },
    )
    for fn in ("ApiFunction", "ChatStreamFunction"):
        assert local.value(env_of(template, fn)["RERANKER_API_KEY_PARAM"]) is NO_VALUE
        assert not [s for s in local.grants(fn) if s.get("Sid", "").startswith("RerankerApiKey")]
        assert http.value(env_of(template, fn)["RERANKER_API_KEY_PARAM"]) == "secretsmanager:rag/rerank"
        assert http.value(env_of(template, fn)["RERANKER_URL"]) == "https://api.cohere.com/v2/rerank"
        assert local.value(env_of(template, fn)["RERANKER_URL"]) is NO_VALUE
        granted = [s for s in http.grants(fn) if s.get("Sid", "").startswith("RerankerApiKey")]
        assert [(s["Sid"], as_list(s["Action"])) for s in granted] == [
            ("RerankerApiKeyInSecretsManager", ["secretsmanager:GetSecretValue"])
        ]
    for fn in ("ArchiveFunction", "IngestFunction", "AttachmentFunction"):
        assert "RERANKER_API_KEY_PARAM" not in env_of(template, fn)
        assert not [s for s in http.grants(fn) if s.get("Sid", "").startswith("RerankerApiKey")]


def test_no_cursor_key_means_no_variable_and_no_grant(template):
    deployment = Deployment(template)
    for fn in ("ApiFunction", "ChatStreamFunction"):
        assert deployment.value(env_of(template, fn)["CURSOR_SECRET_PARAM"]) is NO_VALUE
        assert not [s for s in deployment.grants(fn) if s.get("Sid", "").startswith("CursorSecret")]


# ---------------------------------------------------------------- partitions


ADAPTER_ARN = "arn:aws-cn:lambda:cn-north-1:123456789012:layer:LambdaAdapterLayerArm64:25"


def adapter_layer(deployment: Deployment) -> str:
    props = deployment.template["Resources"]["ChatStreamFunction"]["Properties"]
    (layer,) = deployment.value(props["Layers"])
    return layer


@pytest.mark.parametrize("region", ["us-east-1", "eu-central-1", "ap-southeast-2"])
def test_the_web_adapter_is_the_published_layer_of_the_region(template, region):
    deployment = Deployment(template, region=region)
    expected = f"arn:aws:lambda:{region}:753240598075:layer:LambdaAdapterLayerArm64:25"
    assert adapter_layer(deployment) == expected
    assert deployment.refusals() == []


@pytest.mark.parametrize("region", ["cn-north-1", "cn-northwest-1", "us-gov-west-1", "us-gov-east-1"])
def test_outside_the_aws_partition_the_operators_own_layer_is_required(template, region):
    assert "WebAdapterLayerOutsideTheAwsPartition" in Deployment(template, region=region).refusals()
    given = Deployment(template, {"WebAdapterLayerArn": ADAPTER_ARN}, region)
    assert adapter_layer(given) == ADAPTER_ARN and given.refusals() == []


def test_edge_protection_is_refused_in_govcloud(template):
    params = {"EnableEdgeProtection": "true", "EdgeWebAclArn": "", "WebAdapterLayerArn": ADAPTER_ARN}
    deployment = Deployment(template, params, "us-gov-west-1")
    assert "EdgeProtectionOutsideGovCloud" in deployment.refusals()
    assert not deployment.condition("EdgeProtection")


def test_nothing_is_tied_to_the_aws_partition(template):
    """ARNs name ${AWS::Partition}, hosts ${AWS::URLSuffix} (AllowedPatterns accept any partition)."""
    text = (REPO / "template.yaml").read_text()
    assert "arn:aws:" not in text
    lines = [line for line in text.splitlines() if "amazonaws.com" in line and "e.g." not in line]
    assert lines == []
    dashboard = Deployment(template, region="cn-north-1").value(template["Outputs"]["DashboardUrl"]["Value"])
    assert dashboard.startswith("https://console.amazonaws.cn/cloudwatch/home?region=cn-north-1")


def test_cfn_lint_is_clean_in_the_aws_aws_cn_and_aws_us_gov_partitions():
    cfn_lint = sam_cli().parent / "cfn-lint"
    assert cfn_lint.exists(), f"no cfn-lint beside {sam_cli()}: run `bash devserver/bootstrap.sh sam`"
    done = subprocess.run(
        [str(cfn_lint), "--regions", "us-east-1", "cn-north-1", "us-gov-west-1", "--", "template.yaml"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr


# ---------------------------------------------------------------- Lambda's limit on the environment


PROVIDERS = {
    "deepseek_single": "DeepSeek",
    "qwen_single_thinking": "Qwen",
    "openai_compatible": "OpenAICompatible",
}


def inline_mcp_servers(length: int) -> str:
    """An MCP_SERVERS document given inline, `length` characters long and quoted like a real one."""
    shell = '{"servers":[{"name":"orders","url":"https://orders.example.com/%s"}]}'
    return shell % ("m" * (length - len(shell) + 2))


def everything_given(template: dict, strategy: str) -> dict[str, str]:
    """A deployment that sets every parameter of its model provider and of everything else, each value
    as long as a real one: secrets in Secrets Manager by name, URLs, numbers, the longest choice, the
    MCP servers' document inline as long as the template accepts; every feature that needs a key on
    (guests, the OpenAI-compatible embedder, captions, Whisper)."""
    values = dict(REQUIRED, ModelStrategy=strategy)
    others = tuple(prefix for name, prefix in PROVIDERS.items() if name != strategy)
    for name, parameter in template["Parameters"].items():
        pattern = parameter.get("AllowedPattern", "")
        if name in values or parameter["Type"] != "String" or name.startswith(others):
            continue
        if name in SECRETS:
            values[name] = f"secretsmanager:rag-orchestrator/prod/{name}"
        elif name == "McpServers":
            values[name] = inline_mcp_servers(int(parameter["MaxLength"]))
        elif "AllowedValues" in parameter:
            values[name] = max(parameter["AllowedValues"], key=len)
        elif "https?://" in pattern or "https://" in pattern:
            values[name] = "https://dashscope.aliyuncs.com/compatible-mode/v1"
        elif "[0-9]" in pattern:
            values[name] = "123456"
        elif parameter.get("Default") == "":
            values[name] = "a-typical-value-of-24-ch"
    return values | {
        "AllowAnonymous": "true",
        "EmbeddingProvider": "openai_compatible",
        "AttachmentCaptionBackend": "openai_compatible",
        "AttachmentSpeechBackend": "whisper",
    }


@pytest.mark.parametrize("strategy", PROVIDERS)
@pytest.mark.parametrize("fn", FUNCTIONS)
def test_every_functions_environment_fits_lambdas_4_kb_with_every_setting_given(template, fn, strategy):
    """Lambda refuses a function whose variables, as JSON, exceed 4 KB: each reference and setting goes
    only to the functions that read it, and a blank parameter passes nothing."""
    environment = Deployment(template, everything_given(template, strategy), "eu-central-1").value(
        env_of(template, fn)
    )
    # a resource's name (a placeholder here) as long as a real one
    named = {
        k: re.sub(r"<[A-Za-z.]+>", "rag-orchestrator-prod-" + "x" * 40, v) for k, v in environment.items()
    }
    size = len(json.dumps(named, separators=(",", ":")))
    assert size < 4096, (fn, size)


# ---------------------------------------------------------------- samconfig.toml's environments


def samconfig_environments() -> list[tuple[str, str, dict[str, str]]]:
    import tomllib

    config = tomllib.loads((REPO / "samconfig.toml").read_text())
    return [
        (
            name,
            env["global"]["parameters"]["region"],
            dict(o.split("=", 1) for o in env["deploy"]["parameters"]["parameter_overrides"]),
        )
        for name, env in config.items()
        if isinstance(env, dict) and "deploy" in env
    ]


@pytest.mark.parametrize(("name", "region", "overrides"), samconfig_environments(), ids=lambda v: str(v)[:20])
def test_each_samconfig_environment_deploys_and_configures_every_function(
    template, monkeypatch, name, region, overrides
):
    """Its values are the template's, no rule refuses them, and each function starts with what it gets."""
    from rag_orchestrator.config import load_settings

    assert {"default", "prod", "china"} <= {env for env, _, _ in samconfig_environments()}
    for parameter, value in overrides.items():
        declared = template["Parameters"][parameter]
        assert re.fullmatch(declared.get("AllowedPattern", ".*"), value), (parameter, value)
        assert value in [str(v) for v in declared.get("AllowedValues", [value])], (parameter, value)
    deployment = Deployment(template, overrides, region)
    assert deployment.refusals() == []
    for fn in FUNCTIONS:
        with monkeypatch.context() as scoped:
            scoped.setenv("AWS_LAMBDA_FUNCTION_NAME", fn)
            for variable, value in deployment.value(env_of(template, fn)).items():
                scoped.setenv(variable, str(value))
            load_settings()
