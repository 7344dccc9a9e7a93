"""The tool catalogue: loading YAML and JSON, and one start-up error per validation rule."""

from __future__ import annotations

import copy
import json

import pytest

from rag_orchestrator.config import load_settings
from rag_orchestrator.errors import ConfigError
from rag_orchestrator.tools.catalog import (
    EXAMPLE_PATH,
    environment_secret,
    environment_secrets,
    load_catalog,
    parse_catalog,
)

SECRETS = {"API": "https://api.example.test", "TOKEN": "s3cret-token"}
LOOKUP = SECRETS.get

TOOL = {
    "name": "get_order_status",
    "description": "Look up an order",
    "exampleQueries": ["where is my order"],
    "contexts": ["orders"],
    "core": False,
    "roles": ["user", "admin"],
    "inputSchema": {
        "type": "object",
        "properties": {"orderId": {"type": "string"}, "accountId": {"type": "string"}},
        "required": ["orderId"],
    },
    "http": {
        "method": "GET",
        "url": "${API}/orders/{orderId}",
        "headers": {"Authorization": "Bearer ${TOKEN}"},
        "timeoutSeconds": 10,
        "contextParams": ["accountId"],
    },
    "preview": "workflow_preview",
}


def doc(*tools, **top):
    return {"tools": list(tools or [TOOL]), **top}


def tool(**changes):
    """TOOL with changes; a dotted key (`http.method`) changes a nested field, None removes it."""
    entry = copy.deepcopy(TOOL)
    for key, value in changes.items():
        *path, last = key.split("__")
        target = entry
        for part in path:
            target = target[part]
        if value is None:
            target.pop(last, None)
        else:
            target[last] = value
    return entry


def settings(path=None):
    return load_settings(conversation_storage="memory", tool_catalog_path=str(path) if path else None)


def test_a_valid_catalogue_keeps_every_field():
    catalog = parse_catalog(doc(), lookup=LOOKUP)
    spec = catalog.tools[0]
    assert (spec.name, spec.contexts, spec.roles, spec.preview) == (
        "get_order_status",
        ("orders",),
        ("user", "admin"),
        "workflow_preview",
    )
    assert spec.http.context_params == {"accountId": "context"} and spec.http.timeout_seconds == 10
    assert spec.embed_text() == "get_order_status — Look up an order | where is my order"
    assert catalog.rag_search.roles is None


def test_no_catalogue_path_means_rag_search_only():
    assert load_catalog(settings()).tools == ()


def test_yaml_and_json_files_load(tmp_path):
    import yaml

    (tmp_path / "c.yaml").write_text(yaml.safe_dump(doc()))
    (tmp_path / "c.json").write_text(json.dumps(doc()))
    for name in ("c.yaml", "c.json"):
        assert load_catalog(settings(tmp_path / name), LOOKUP).tools[0].name == "get_order_status"


def test_yaml_is_read_by_libyaml_where_the_wheel_has_it_to_the_same_documents(monkeypatch):
    """The C loader (a cold start's catalogue ~8x faster) gives what the pure-Python one gives, for the
    catalogues and YAML documents of the repository; without it, the pure-Python loader reads them."""
    from pathlib import Path

    import yaml

    from rag_orchestrator.tools.catalog_source import parse_document

    # The project's pyyaml (the wheel for Linux, as the layer's for Lambda) carries libyaml.
    assert hasattr(yaml, "CSafeLoader"), "pyyaml without libyaml: catalogues would be read 8x slower"
    root = Path(__file__).resolve().parents[2]
    documents = [
        root / name
        for name in (
            "tests/data/tool_catalog_30.yaml",
            "devserver/demo_catalog.yaml",
            "eval/everyday.yaml",
            "eval/project_docs.yaml",
            "eval/questions.yaml",
        )
    ] + [EXAMPLE_PATH]
    used: list[str] = []

    class Spy(yaml.CSafeLoader):
        def __init__(self, stream: str) -> None:
            used.append("libyaml")
            super().__init__(stream)

    monkeypatch.setattr(yaml, "CSafeLoader", Spy)
    for path in documents:
        text = path.read_text(encoding="utf-8")
        assert parse_document(text, str(path), ".yaml") == yaml.load(text, Loader=yaml.SafeLoader), path
    assert used == ["libyaml"] * len(documents)
    monkeypatch.delattr(yaml, "CSafeLoader")  # a pyyaml built without libyaml
    assert parse_document("tools: [a, b]", "x.yaml", ".yaml") == {"tools": ["a", "b"]}


@pytest.mark.parametrize(
    ("filename", "content", "expected"),
    [
        ("missing.yaml", None, "cannot read"),
        ("c.txt", "tools: []", "must end in .yaml, .yml or .json"),
        ("c.yaml", "tools: [unclosed", "not valid YAML"),
        ("c.json", "{nope", "is not valid"),
    ],
)
def test_unreadable_files_name_the_setting(tmp_path, filename, content, expected):
    path = tmp_path / filename
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError, match="TOOL_CATALOG_PATH") as raised:
        load_catalog(settings(path), LOOKUP)
    assert expected in raised.value.message


def test_the_packaged_example_documents_a_valid_catalogue(monkeypatch):
    monkeypatch.setenv("ORDERS_API_TOKEN", "t1")
    monkeypatch.setenv("WORKFLOWS_API_TOKEN", "t2")
    catalog = load_catalog(settings(EXAMPLE_PATH))
    assert len(catalog.tools) >= 5
    assert {spec.preview for spec in catalog.tools} >= {"workflow_preview", "table_config_preview"}
    assert {p for spec in catalog.tools for p in spec.http.attachment_params} == {"file"}
    lines = EXAMPLE_PATH.read_text().splitlines()
    for field in (
        "ragSearch",
        "name",
        "description",
        "exampleQueries",
        "contexts",
        "core",
        "roles",
        "inputSchema",
        "http",
        "method",
        "url",
        "headers",
        "timeoutSeconds",
        "contextParams",
        "attachmentParams",
        "preview",
    ):
        # the first use of every field carries a comment, on its line or just above it
        at = next(i for i, line in enumerate(lines) if f"{field}:" in line.split("#")[0])
        assert "#" in lines[at] or "#" in lines[at - 1], field


def test_the_example_without_its_secrets_fails_naming_the_header(monkeypatch):
    monkeypatch.delenv("ORDERS_API_TOKEN", raising=False)
    with pytest.raises(ConfigError) as raised:
        load_catalog(settings(EXAMPLE_PATH))
    assert "tool 'get_order_status': http.headers.Authorization: ${ORDERS_API_TOKEN} is not set" in str(
        raised.value
    )


# One case per rule: (document, the tool and field the error must name, what it must say).
RULES = {
    "unknown tool field": (doc(tool(color="red")), "tool 'get_order_status': color", "Extra inputs"),
    "unknown http field": (doc(tool(http__verb="GET")), "'get_order_status': http.verb", "Extra inputs"),
    "unknown top-level field": (doc(version=2), "unknown field(s) version", ""),
    "duplicate name": (doc(TOOL, TOOL), "tool 'get_order_status': name", "duplicate"),
    "name pattern": (doc(tool(name="get order")), "tool 'get order': name", "pattern"),
    "name too long": (doc(tool(name="x" * 65)), "name", "pattern"),
    "reserved name": (doc(tool(name="rag_search")), "tool 'rag_search': name", "built in"),
    "missing description": (doc(tool(description=None)), "'get_order_status': description", "required"),
    "invalid JSON Schema": (
        doc(tool(inputSchema__properties={"orderId": {"type": "strnig"}})),
        "'get_order_status': inputSchema",
        "is not valid",
    ),
    "schema not an object": (doc(tool(inputSchema={"type": "string"})), "inputSchema.type", "'object'"),
    "method": (doc(tool(http__method="TRACE")), "'get_order_status': http.method", "GET"),
    "relative url": (doc(tool(http__url="/orders/{orderId}")), "http.url", "absolute http or https"),
    "non-http url": (doc(tool(http__url="ftp://files.example/{orderId}")), "http.url", "absolute http"),
    "placeholder not in schema": (doc(tool(http__url="${API}/o/{order}")), "http.url", "{order} is not"),
    "placeholder optional": (
        doc(tool(http__url="${API}/a/{accountId}", http__contextParams=[])),
        "http.url",
        "must be required",
    ),
    "placeholder in host": (doc(tool(http__url="https://{orderId}.example/x")), "http.url", "host"),
    "credentials in url": (
        doc(tool(http__url="https://u:p@api.example/{orderId}")),
        "http.url",
        "credentials",
    ),
    "unresolvable header": (
        doc(tool(http__headers={"X-Key": "${NOPE}"})),
        "'get_order_status': http.headers.X-Key",
        "${NOPE} is not set",
    ),
    "unresolvable url": (doc(tool(http__url="${NOPE}/orders/{orderId}")), "http.url", "${NOPE} is not set"),
    "bad variable name": (doc(tool(http__headers={"X": "${1-a}"})), "http.headers.X", "not a valid variable"),
    "timeout zero": (doc(tool(http__timeoutSeconds=0)), "http.timeoutSeconds", "greater than 0"),
    "timeout over 60": (doc(tool(http__timeoutSeconds=61)), "http.timeoutSeconds", "less than or equal"),
    "context param not in schema": (
        doc(tool(http__contextParams=["tenantId"])),
        "http.contextParams",
        "tenantId is not a property",
    ),
    "preview type": (doc(tool(preview="map_preview")), "'get_order_status': preview", "workflow_preview"),
    "empty roles": (doc(tool(roles=[])), "'get_order_status': roles", "must not be empty"),
    "anonymous role": (doc(tool(roles=["anonymous"])), "'get_order_status': roles", "anonymous"),
    "empty contexts": (doc(tool(contexts=[])), "'get_order_status': contexts", "must not be empty"),
    "core not a bool": (doc(tool(core="sometimes")), "'get_order_status': core", "boolean"),
    "tools not a list": ({"tools": {"a": 1}}, "tools", "must be a list"),
    "ragSearch field": (doc(ragSearch={"contexts": ["x"]}), "ragSearch.contexts", "Extra inputs"),
    "ragSearch anonymous": (doc(ragSearch={"roles": ["anonymous"]}), "ragSearch.roles", "anonymous"),
    "unnamed tool": (doc({"description": "x"}), "tool #1: name", "required"),
}


@pytest.mark.parametrize("rule", list(RULES))
def test_each_validation_rule_names_the_tool_and_field(rule):
    document, names, says = RULES[rule]
    with pytest.raises(ConfigError) as raised:
        parse_catalog(document, "catalog.yaml", lookup=LOOKUP)
    message = raised.value.message
    assert message.startswith("catalog.yaml: ") and names in message and says in message, message


def test_secrets_come_from_the_environment_or_ssm_in_lambda(monkeypatch):
    monkeypatch.setenv("ORDERS_TOKEN", "from-env")
    assert environment_secret("ORDERS_TOKEN") == "from-env"
    monkeypatch.delenv("ORDERS_TOKEN")
    monkeypatch.setenv("ORDERS_TOKEN_PARAM", "/app/orders-token")
    assert environment_secret("ORDERS_TOKEN") is None  # outside Lambda the parameter is not read
    fetched = []

    class Secrets:  # the root's SecretReader
        def read(self, name: str) -> str:
            fetched.append(name)
            return "from-ssm"

    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "fn")
    assert environment_secrets(Secrets())("ORDERS_TOKEN") == "from-ssm"  # type: ignore[arg-type]
    assert fetched == ["/app/orders-token"]
    with pytest.raises(ValueError, match="cannot be read"):  # no root gave this lookup AWS clients
        environment_secret("ORDERS_TOKEN")
