"""MCP_SERVERS: the document's forms, and each problem a ConfigError naming the server and the field."""

from __future__ import annotations

import json

import pytest

from rag_orchestrator.config import load_settings
from rag_orchestrator.errors import ConfigError
from rag_orchestrator.tools.mcp_servers import load_servers, parse_servers

ORDERS = {"name": "orders", "url": "https://orders.example.com/mcp"}


def test_a_server_takes_the_defaults_of_the_contract():
    (server,) = parse_servers({"servers": [ORDERS]})
    assert server.identity == "assertion"
    assert server.roles is server.contexts is server.include is server.approval is None
    assert server.tool_name("lookup") == "orders__lookup"
    assert server.origin == "https://orders.example.com"
    assert not server.needs_approval("lookup") and server.keeps("anything")


def test_every_field_is_read():
    (server,) = parse_servers(
        [
            {
                **ORDERS,
                "headers": {"X-Api-Key": "${ssm:/rag/orders-key}"},
                "identity": "caller-token",
                "roles": ["user", "moderator"],
                "contexts": ["orders"],
                "approval": ["cancel"],
                "timeoutSeconds": 12,
                "include": ["lookup", "cancel"],
            }
        ]
    )
    assert server.roles == ("user", "mod") and server.contexts == ("orders",)
    assert server.needs_approval("cancel") and not server.needs_approval("lookup")
    assert server.keeps("lookup") and not server.keeps("delete")
    assert server.timeout_seconds == 12
    (every,) = parse_servers([{**ORDERS, "approval": "required"}])
    assert every.needs_approval("lookup")


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ({"url": "https://x.example.com"}, "server #1: name: Field required"),
        ({**ORDERS, "name": "a__b"}, "name: String should match pattern"),
        ({**ORDERS, "name": "x" * 33}, "name: String should have at most 32 characters"),
        ({**ORDERS, "url": "ftp://x.example.com"}, "url: must be an absolute http or https URL"),
        ({**ORDERS, "url": "https://user:pw@x.example.com"}, "url: must not carry credentials"),
        ({**ORDERS, "headers": {"Bad Name": "1"}}, "is not a valid header name"),
        ({**ORDERS, "headers": {"X-Caller-Assertion": "forged"}}, "is set by the service"),
        ({**ORDERS, "headers": {"Mcp-Session-Id": "1"}}, "is set by the service"),
        ({**ORDERS, "headers": {"X-Key": "a\r\nInjected: 1"}}, "may not hold a line break"),
        ({**ORDERS, "headers": {"X-Key": "${ORDERS_KEY}"}}, "the only references a value may hold"),
        ({**ORDERS, "headers": {"X-Key": "${ssm:rag/key}"}}, "the only references a value may hold"),
        ({**ORDERS, "headers": {"X-Key": "${secretsmanager:}"}}, "the only references a value may hold"),
        ({**ORDERS, "headers": {"X-Key": "${ssm:/rag/keys#a b}"}}, "the only references a value may hold"),
        ({**ORDERS, "identity": "basic"}, "identity: Input should be"),
        ({**ORDERS, "roles": ["anonymous"]}, "anonymous callers get no tools"),
        ({**ORDERS, "contexts": []}, "must be a list of non-empty strings"),
        ({**ORDERS, "approval": "sometimes"}, "approval"),
        ({**ORDERS, "timeoutSeconds": 0}, "timeoutSeconds: Input should be greater than 0"),
        ({**ORDERS, "extra": 1}, "extra: Extra inputs are not permitted"),
    ],
)
def test_each_problem_names_the_server_and_the_field(entry, says):
    with pytest.raises(ConfigError) as caught:
        parse_servers({"servers": [entry]})
    assert says in str(caught.value) and str(caught.value).startswith("MCP_SERVERS: server ")


@pytest.mark.parametrize(
    "value",
    [
        "${ssm:/rag/orders-key}",
        "Bearer ${secretsmanager:rag/tools/orders}",
        "${secretsmanager:rag/tools/keys#orders}",
        "${secretsmanager:arn:aws:secretsmanager:eu-west-1:123456789012:secret:shared/keys-AbCdEf#orders}",
        "${ssm:/rag/keys#orders}-${secretsmanager:rag/tools/tenant}",
    ],
)
def test_a_header_refers_to_secrets_in_ssm_or_secrets_manager_as_every_secret_setting(value):
    (server,) = parse_servers([{**ORDERS, "headers": {"X-Api-Key": value}}])
    assert server.headers == {"X-Api-Key": value}


def test_the_document_itself_is_checked():
    with pytest.raises(ConfigError, match="duplicate server name"):
        parse_servers([ORDERS, ORDERS])
    with pytest.raises(ConfigError, match="unknown field"):
        parse_servers({"servers": [], "tools": []})
    with pytest.raises(ConfigError, match="a list of servers"):
        parse_servers("orders")
    assert parse_servers({"servers": []}) == () == parse_servers(None or [])


def test_mcp_servers_is_a_file_or_the_json_itself(tmp_path):
    assert load_servers(load_settings(conversation_storage="memory")) == ()
    inline = load_settings(conversation_storage="memory", mcp_servers=json.dumps([ORDERS]))
    assert [s.name for s in load_servers(inline)] == ["orders"]
    path = tmp_path / "mcp.yaml"
    path.write_text("servers:\n  - name: wiki\n    url: http://127.0.0.1:9/mcp\n    identity: none\n")
    from_file = load_settings(conversation_storage="memory", mcp_servers=str(path))
    assert [s.name for s in load_servers(from_file)] == ["wiki"]
    with pytest.raises(ConfigError, match="MCP_SERVERS: the JSON document is not valid"):
        load_servers(load_settings(conversation_storage="memory", mcp_servers='{"servers": ['))
    with pytest.raises(ConfigError, match="MCP_SERVERS: cannot read"):
        load_servers(load_settings(conversation_storage="memory", mcp_servers=str(tmp_path / "none.json")))


def test_the_ttl_is_at_least_a_second():
    assert load_settings(conversation_storage="memory").mcp_tools_ttl_seconds == 300
    assert load_settings(conversation_storage="memory", mcp_tools_ttl_seconds=1).mcp_tools_ttl_seconds == 1
    with pytest.raises(ConfigError, match="MCP_TOOLS_TTL_SECONDS"):
        load_settings(conversation_storage="memory", mcp_tools_ttl_seconds=0.5)
