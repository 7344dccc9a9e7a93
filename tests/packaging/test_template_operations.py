"""template.yaml as an operator deploys it: settings as parameters, tools in AWS, alarms on metrics the
code really emits, one dashboard, and the abuse limits (concurrency cap, optional CloudFront + WAF).

Conditions and rules are checked by evaluating them (a small evaluator of the intrinsic functions
they use) on the values an operator would give.
"""

from __future__ import annotations

import ast
import io
import json
import logging
import re
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from devserver.cfn_yaml import load_template  # noqa: E402
from tests.packaging.intrinsics import NO_VALUE as NO_VALUE_LEFT_OUT  # noqa: E402
from tests.packaging.intrinsics import Deployment  # noqa: E402
from tests.packaging.test_template import FUNCTIONS, as_list, branches, env_of  # noqa: E402

CODE = [REPO / "layers" / "core" / "rag_orchestrator", REPO / "functions"]
NO_VALUE = {"Ref": "AWS::NoValue"}
NOTIFY = {"Fn::If": ["HasAlarmTopic", [{"Ref": "AlarmTopicArn"}], NO_VALUE]}


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template(REPO / "template.yaml")


@pytest.fixture(scope="module")
def resources(template) -> dict[str, Any]:
    return template["Resources"]


def of_type(resources: dict, kind: str) -> dict[str, dict]:
    return {k: v["Properties"] for k, v in resources.items() if v["Type"] == kind}


def condition(name: str, template: dict, region: str = "us-east-1", **params: str) -> bool:
    return Deployment(template, params, region).condition(name)


# ---------------------------------------------------------------- settings as parameters


def test_every_variable_the_template_sets_is_a_setting_the_app_reads(template):
    from rag_orchestrator.config import Settings

    infrastructure = ("AWS_", "POWERTOOLS_")
    for fn in FUNCTIONS:
        for variable in env_of(template, fn):
            if (
                variable.startswith(infrastructure)
                or variable in ("LOG_LEVEL",)
                or variable.endswith("_PARAM")
            ):
                continue
            assert variable.lower() in Settings.model_fields, (fn, variable)


def test_the_log_level_allows_trace(template):
    assert "TRACE" in template["Parameters"]["LogLevel"]["AllowedValues"]


# ---------------------------------------------------------------- tools in AWS


@pytest.mark.parametrize(
    ("value", "allowed"),
    [
        ("", True),
        ("s3://my-config-bucket/tools/catalog.yaml", True),
        ("/rag-orchestrator/tool-catalog", True),
        ("s3://my-config-bucket", False),
        ("s3://my-config-bucket/tools/catalog.txt", False),
        ("ssm:/rag-orchestrator/tool-catalog", False),
        ("catalog.yaml", False),
    ],
)
def test_the_catalogue_parameter_takes_an_s3_object_or_an_ssm_parameter(template, value, allowed):
    pattern = template["Parameters"]["ToolCatalog"]["AllowedPattern"]
    assert bool(re.fullmatch(pattern, value)) is allowed


@pytest.mark.parametrize(
    ("value", "in_s3", "in_ssm", "path"),
    [
        ("", False, False, ""),
        ("s3://b/tools.yaml", True, False, "s3://b/tools.yaml"),
        ("/rag/tools", False, True, "ssm:/rag/tools"),
    ],
)
def test_the_catalogue_reaches_the_tool_functions_with_read_access_to_it_alone(
    template, resources, value, in_s3, in_ssm, path
):
    assert condition("ToolCatalogInS3", template, ToolCatalog=value) is in_s3
    assert condition("ToolCatalogInSsm", template, ToolCatalog=value) is in_ssm
    for fn in ("ApiFunction", "ChatStreamFunction"):
        variable = Deployment(template, {"ToolCatalog": value}).value(
            env_of(template, fn)["TOOL_CATALOG_PATH"]
        )
        assert variable == (path or NO_VALUE_LEFT_OUT)  # what the app reads (tools/catalog.py); blank: unset
        statements = resources[fn]["Properties"]["Policies"][0]["Statement"]
        # The others are the attachment engines' (UseTextract, UseTranscribe: test_template.py).
        conditional = [s["Fn::If"] for s in statements if s.get("Fn::If", [""])[0].startswith("ToolCatalog")]
        assert {c[0] for c in conditional} == {"ToolCatalogInS3", "ToolCatalogInSsm"}
        for name, statement, otherwise in conditional:
            assert otherwise == NO_VALUE
            expected = ["s3:GetObject"] if name == "ToolCatalogInS3" else ["ssm:GetParameter"]
            assert statement["Action"] == expected and "*" not in json.dumps(statement["Resource"])


@pytest.mark.parametrize(
    ("value", "allowed"),
    [
        ("", True),
        ('{"servers": [{"name": "orders", "url": "https://orders.example.com/mcp"}]}', True),
        ('[{"name": "orders", "url": "https://orders.example.com/mcp"}]', True),
        ("s3://my-config-bucket/mcp.json", True),
        ("/rag-orchestrator/mcp-servers", True),
        ("s3://my-config-bucket/mcp.txt", False),
        ("ssm:/rag-orchestrator/mcp-servers", False),
        ("mcp.json", False),
        ('{"servers": [{"name": "orders"', False),
    ],
)
def test_the_mcp_servers_parameter_takes_the_document_an_s3_object_or_an_ssm_parameter(
    template, value, allowed
):
    pattern = template["Parameters"]["McpServers"]["AllowedPattern"]
    assert bool(re.fullmatch(pattern, value)) is allowed


def test_the_inline_mcp_servers_documents_limit_is_the_one_the_docs_give(template):
    """Lambda's 4 KB environment bounds a document given inline (test_template_settings.py deploys one
    this long with every other setting given); docs/mcp.md sends larger ones to S3 or SSM."""
    parameter = template["Parameters"]["McpServers"]
    said = f"at most {parameter['MaxLength']} characters"
    assert said in parameter["ConstraintDescription"]
    assert said in (REPO / "docs" / "mcp.md").read_text()


@pytest.mark.parametrize(
    ("value", "in_s3", "in_ssm", "variable"),
    [
        ("", False, False, ""),
        ('{"servers": []}', False, False, '{"servers": []}'),
        ("s3://b/mcp.json", True, False, "s3://b/mcp.json"),
        ("/rag/mcp", False, True, "ssm:/rag/mcp"),
    ],
)
def test_mcp_servers_reach_the_tool_functions_with_read_access_to_their_document_alone(
    template, resources, value, in_s3, in_ssm, variable
):
    assert condition("McpServersInS3", template, McpServers=value) is in_s3
    assert condition("McpServersInSsm", template, McpServers=value) is in_ssm
    deployment = Deployment(template, {"McpServers": value})
    for fn in ("ApiFunction", "ChatStreamFunction"):
        given = deployment.value(env_of(template, fn)["MCP_SERVERS"])
        assert given == (variable or NO_VALUE_LEFT_OUT)  # what the app reads (tools/mcp_servers.py)
        statements = resources[fn]["Properties"]["Policies"][0]["Statement"]
        conditional = [s["Fn::If"] for s in statements if s.get("Fn::If", [""])[0].startswith("McpServers")]
        assert {c[0] for c in conditional} == {"McpServersInS3", "McpServersInSsm"}
        for name, statement, otherwise in conditional:
            assert otherwise == NO_VALUE
            expected = ["s3:GetObject"] if name == "McpServersInS3" else ["ssm:GetParameter"]
            assert statement["Action"] == expected and "*" not in json.dumps(statement["Resource"])


@pytest.mark.parametrize(
    ("prefix", "action", "resource"),
    [
        (
            "/rag-orchestrator/tools/",
            "ssm:GetParameter",
            "ssm:us-east-1:123456789012:parameter/rag-orchestrator/tools/*",
        ),
        ("/a/", "ssm:GetParameter", "ssm:us-east-1:123456789012:parameter/a/*"),
        (
            "secretsmanager:rag-orchestrator/tools/",
            "secretsmanager:GetSecretValue",
            "secretsmanager:us-east-1:123456789012:secret:rag-orchestrator/tools/*",
        ),
        ("/", None, None),
        ("/tools", None, None),
        ("tools/", None, None),
        ("secretsmanager:tools", None, None),
    ],
)
def test_tool_secrets_are_readable_under_one_prefix_and_nowhere_else(template, prefix, action, resource):
    pattern = template["Parameters"]["ToolSecretsPrefix"]["AllowedPattern"]
    assert bool(re.fullmatch(pattern, prefix)) is (action is not None)
    if action is None:
        return
    deployment = Deployment(template, {"ToolSecretsPrefix": prefix})
    for fn in ("ApiFunction", "ChatStreamFunction"):
        (grant,) = [s for s in deployment.grants(fn) if s.get("Sid", "").startswith("ToolSecrets")]
        assert action in as_list(grant["Action"]) and grant["Resource"] == f"arn:aws:{resource}"
        assert env_of(template, fn)["TOOL_SECRETS_PREFIX"] == {"Ref": "ToolSecretsPrefix"}


# ---------------------------------------------------------------- alarms and the dashboard


def emitted_metrics() -> set[str]:
    """Every name given to `metrics.add_metric(name=...)` in the code the functions run: a literal, or a
    loop variable taking its values from a literal table (archival's report)."""
    names: set[str] = set()
    for path in (p for root in CODE for p in root.rglob("*.py")):
        tree = ast.parse(path.read_text())
        tables: dict[str, set[str]] = {}
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.For)
                and isinstance(node.target, ast.Tuple)
                and isinstance(node.iter, ast.Tuple)
            ):
                first = node.target.elts[0]
                rows = [row for row in node.iter.elts if isinstance(row, ast.Tuple)]
                if isinstance(first, ast.Name):
                    tables[first.id] = {
                        row.elts[0].value for row in rows if isinstance(row.elts[0], ast.Constant)
                    }
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_metric":
                (name,) = [k.value for k in node.keywords if k.arg == "name"]
                if isinstance(name, ast.Constant):
                    names.add(name.value)
                else:
                    assert isinstance(name, ast.Name) and name.id in tables, (
                        f"{path}: a name this test cannot read"
                    )
                    names |= tables[name.id]
    return names


def alarm_metrics(alarm: dict) -> list[dict]:
    """(Namespace, MetricName, Dimensions) of an alarm, a single metric or each of its metric math inputs."""
    if "Namespace" in alarm:
        return [{k: alarm.get(k) for k in ("Namespace", "MetricName", "Dimensions")}]
    return [m["MetricStat"]["Metric"] for m in alarm["Metrics"] if "MetricStat" in m]


def test_the_code_emits_the_metrics_the_alarms_need():
    emitted = emitted_metrics()
    assert {"TurnFailures", "TurnsCompleted", "TimeToFirstToken", "ConversationsArchived"} <= emitted


def test_every_alarm_on_our_namespace_names_a_metric_the_code_emits(template, resources):
    emitted = emitted_metrics()
    # the code's own service name and namespace (the template passes neither), read without importing it
    source = (REPO / "layers/core/rag_orchestrator/observability.py").read_text()
    SERVICE = re.search(r'"POWERTOOLS_SERVICE_NAME", "([^"]+)"', source).group(1)
    NAMESPACE = re.search(r'"POWERTOOLS_METRICS_NAMESPACE", "([^"]+)"', source).group(1)
    ours = {"Name": "service", "Value": SERVICE}
    checked = 0
    for name, alarm in of_type(resources, "AWS::CloudWatch::Alarm").items():
        for metric in alarm_metrics(alarm):
            if metric["Namespace"] == NAMESPACE:
                assert metric["MetricName"] in emitted, (name, metric["MetricName"])
                assert metric["Dimensions"] == [ours], name  # Powertools' one default dimension
                checked += 1
    assert checked >= 3  # turn failures, turns completed, time to first token


def test_the_dashboard_shows_only_metrics_that_exist(template, resources):
    (dashboard,) = of_type(resources, "AWS::CloudWatch::Dashboard").values()
    body, _ = dashboard["DashboardBody"]["Fn::Sub"]
    widgets = json.loads(re.sub(r"\$\{[^}]+\}", "1", body))["widgets"]
    emitted = emitted_metrics()
    rows = [
        row for widget in widgets if widget["type"] == "metric" for row in widget["properties"]["metrics"]
    ]
    ours = [row for row in rows if row[0] == "RagOrchestrator"]
    assert ours and all(row[1] in emitted and row[2:4] == ["service", "rag-orchestrator"] for row in ours)


def test_the_dashboards_usage_widget_sums_the_fields_each_turn_logs(resources):
    """The "turn usage" line (loop/finish.py) carries every field the Logs Insights query reads."""
    from rag_orchestrator.domain.usage import Prices, UsageLine
    from rag_orchestrator.loop.finish import log_usage

    (dashboard,) = of_type(resources, "AWS::CloudWatch::Dashboard").values()
    body, _ = dashboard["DashboardBody"]["Fn::Sub"]
    widgets = json.loads(re.sub(r"\$\{[^}]+\}", "1", body))["widgets"]
    (usage,) = [w for w in widgets if w["type"] == "log"]
    query = usage["properties"]["query"]
    assert "filter message = 'turn usage'" in query
    # read through a handler of its own with the logger's formatter: the logger's handler holds whichever
    # stdout it found when first imported, which another test may have captured
    from rag_orchestrator.observability import logger

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logger.registered_formatter)
    level = logger.log_level
    logger.addHandler(handler)
    logger.setLevel("INFO")
    try:
        log_usage(UsageLine("2026-11-26", "alice", "m", 1, 2, 1000, 500), Prices.parse("m=1/2"))
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    (line,) = [json.loads(x) for x in stream.getvalue().splitlines() if '"turn usage"' in x]
    read = set(re.findall(r"sum\((\w+)\)", query)) | set(re.findall(r"by (\w+)", query))
    assert read and read <= set(line), read - set(line)
    assert line["estimated_cost"] == (1000 * 1 + 500 * 2) / 1_000_000


def test_alarms_cover_each_function_each_failure_queue_the_apis_turns_and_first_tokens(resources):
    alarms = of_type(resources, "AWS::CloudWatch::Alarm")
    watched = {
        (m["Namespace"], m["MetricName"], json.dumps(m.get("Dimensions")))
        for a in alarms.values()
        for m in alarm_metrics(a)
    }
    for fn in FUNCTIONS:
        for metric in ("Errors", "Throttles"):
            assert (
                "AWS/Lambda",
                metric,
                json.dumps([{"Name": "FunctionName", "Value": {"Ref": fn}}]),
            ) in watched
    for queue in of_type(resources, "AWS::SQS::Queue"):
        dims = [{"Name": "QueueName", "Value": {"Fn::GetAtt": [queue, "QueueName"]}}]
        assert ("AWS/SQS", "ApproximateNumberOfMessagesVisible", json.dumps(dims)) in watched, queue
    assert ("AWS/ApiGateway", "5xx", json.dumps([{"Name": "ApiId", "Value": {"Ref": "HttpApi"}}])) in watched
    rate = alarms["TurnFailureRateAlarm"]
    (expression,) = [m for m in rate["Metrics"] if m.get("ReturnData")]
    assert "failed" in expression["Expression"] and "completed" in expression["Expression"]
    assert rate["Threshold"] == {"Ref": "TurnFailureRatePercent"}
    first_token = alarms["TimeToFirstTokenAlarm"]
    assert first_token["ExtendedStatistic"] == "p95" and first_token["MetricName"] == "TimeToFirstToken"


def test_every_alarm_notifies_the_topic_when_one_is_given(resources):
    for name, alarm in of_type(resources, "AWS::CloudWatch::Alarm").items():
        assert alarm["AlarmActions"] == NOTIFY and alarm["OKActions"] == NOTIFY, name
        assert alarm["TreatMissingData"] == "notBreaching", name


# ---------------------------------------------------------------- abuse


def test_the_stream_concurrency_cap_is_a_parameter_with_zero_meaning_unreserved(template):
    assert template["Parameters"]["ChatStreamReservedConcurrency"]["Default"] == 0
    assert condition("CapStreamConcurrency", template) is False
    assert condition("CapStreamConcurrency", template, ChatStreamReservedConcurrency="50") is True


def test_the_rest_api_is_throttled_by_parameters(resources):
    settings = resources["HttpApi"]["Properties"]["DefaultRouteSettings"]
    assert settings == {
        "ThrottlingRateLimit": {"Ref": "ApiThrottleRateLimit"},
        "ThrottlingBurstLimit": {"Ref": "ApiThrottleBurstLimit"},
    }


@pytest.mark.parametrize(
    ("enabled", "region", "arn", "protected", "creates_acl", "refused"),
    [
        ("false", "us-east-1", "", False, False, False),
        ("true", "us-east-1", "", True, True, False),
        ("true", "eu-west-1", "", True, False, True),  # no web ACL for CloudFront outside us-east-1
        (
            "true",
            "eu-west-1",
            "arn:aws:wafv2:us-east-1:123456789012:global/webacl/edge/1",
            True,
            False,
            False,
        ),
    ],
)
def test_edge_protection_is_off_by_default_and_needs_a_us_east_1_web_acl(
    template, enabled, region, arn, protected, creates_acl, refused
):
    assert template["Parameters"]["EnableEdgeProtection"]["Default"] == "false"
    deployment = Deployment(template, {"EnableEdgeProtection": enabled, "EdgeWebAclArn": arn}, region)
    assert deployment.condition("EdgeProtection") is protected
    assert deployment.condition("CreateEdgeWebAcl") is creates_acl
    assert ("EdgeWebAclOutsideUsEast1" in deployment.refusals()) is refused


def test_the_web_acl_rate_limits_each_ip_in_front_of_both_entry_points(resources):
    acl = resources["EdgeWebAcl"]
    assert acl["Condition"] == "CreateEdgeWebAcl" and acl["Properties"]["Scope"] == "CLOUDFRONT"
    rate = [r for r in acl["Properties"]["Rules"] if "RateBasedStatement" in r["Statement"]]
    assert rate and rate[0]["Action"] == {"Block": {}}
    assert rate[0]["Statement"]["RateBasedStatement"] == {
        "Limit": {"Ref": "EdgeRateLimit"},
        "AggregateKeyType": "IP",
    }
    distribution = resources["EdgeDistribution"]
    assert distribution["Condition"] == "EdgeProtection"
    config = distribution["Properties"]["DistributionConfig"]
    origins = {o["Id"]: json.dumps(o["DomainName"]) for o in config["Origins"]}
    assert "HttpApi" in origins[config["DefaultCacheBehavior"]["TargetOriginId"]]
    streamed = {b["PathPattern"]: b["TargetOriginId"] for b in config["CacheBehaviors"]}
    assert set(streamed) == {
        "/api/v1/chat/conversations/*/messages/stream",
        "/api/v1/chat/conversations/*/regenerate",
        "/api/v1/chat/conversations/*/edit",
        "/api/v1/chat/conversations/*/approvals/*",
        "/api/v1/chat/conversations/*/ui-stream",
        "/api/v1/chat/conversations/*/turns/*/events",
        "/api/v1/query/answer/stream",
    }
    assert all("ChatStreamFunctionUrl" in origins[target] for target in streamed.values())
    assert list(branches(config["WebACLId"])) == [
        {"Ref": "EdgeWebAclArn"},
        {"Fn::GetAtt": ["EdgeWebAcl", "Arn"]},
    ]
    for behavior in [config["DefaultCacheBehavior"], *config["CacheBehaviors"]]:
        assert behavior["CachePolicyId"] == "4135ea2d-6df8-44a3-9df3-4b5a84be39ad"  # CachingDisabled
        assert set(as_list(behavior["AllowedMethods"])) >= {"GET", "POST", "DELETE", "OPTIONS"}
