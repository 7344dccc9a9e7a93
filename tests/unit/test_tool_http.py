"""HttpTool against httpx.MockTransport: request building, pinned parameters, the caller's identity,
limits, failures, host pinning."""

from __future__ import annotations

import asyncio
import json

import httpx
import jwt
import pytest

from rag_orchestrator.domain.messages import FunctionCall, ToolCall, ToolPreview
from rag_orchestrator.tools.assertion import AssertionSigner
from rag_orchestrator.tools.base import ToolContext
from rag_orchestrator.tools.catalog import parse_catalog
from rag_orchestrator.tools.http_tool import ClientPool, HttpTool, model_parameters
from rag_orchestrator.tools.registry import ToolRegistry

LOOKUP = {"TOKEN": "s3cret-token-value"}.get
CTX = ToolContext(
    conversation_id="c1", caller_id="alice", context={"accountId": "acc-42", "nested": {"a": 1}}
)
SIGNER = AssertionSigner("rag-orchestrator-test", lambda: None, ephemeral=True)


def spec(method="GET", url="https://api.example.test/v1/orders/{orderId}", **extra):
    http = {"method": method, "url": url, "headers": {"Authorization": "Bearer ${TOKEN}"}}
    http.update(extra.pop("http", {}))
    entry = {
        "name": "order_tool",
        "description": "orders",
        "inputSchema": {
            "type": "object",
            "properties": {
                "orderId": {"type": ["string", "integer"]},
                "accountId": {"type": "string"},
                "status": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "filter": {"type": "object"},
            },
            "required": ["orderId", "accountId"],
        },
        "http": {"contextParams": ["accountId"], **http},
        **extra,
    }
    return parse_catalog({"tools": [entry]}, lookup=LOOKUP).tools[0]


class Recorder:
    """A mock transport handler: records requests and answers with a scripted response."""

    def __init__(self, response=None):
        self.requests: list[httpx.Request] = []
        self.response = response or (lambda request: httpx.Response(200, json={"ok": True}))

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        await request.aread()
        result = self.response(request)
        return await result if asyncio.iscoroutine(result) else result


def make(recorder, max_bytes=1024, **spec_args):
    pool = ClientPool(httpx.MockTransport(recorder))
    return HttpTool(
        spec(**spec_args), pool=pool, lookup=LOOKUP, max_response_bytes=max_bytes, assertions=SIGNER
    )


async def test_get_puts_path_parameters_in_the_path_and_the_rest_in_the_query():
    rec = Recorder()
    result = await make(rec).execute({"orderId": "A B", "status": "open", "tags": ["x", "y"]}, CTX)
    assert result.success and json.loads(result.result) == {"ok": True}
    request = rec.requests[-1]
    assert (
        request.method == "GET"
        and request.url.raw_path == b"/v1/orders/A%20B?status=open&tags=x&tags=y&accountId=acc-42"
    )
    assert request.headers["authorization"] == "Bearer s3cret-token-value" and request.content == b""


async def test_post_sends_the_remaining_arguments_as_a_json_body():
    rec = Recorder()
    result = await make(rec, method="POST").execute({"orderId": 7, "filter": {"a": [1]}}, CTX)
    assert result.success
    request = rec.requests[0]
    assert request.url.path == "/v1/orders/7" and not request.url.query
    assert json.loads(request.content) == {"filter": {"a": [1]}, "accountId": "acc-42"}


async def test_delete_uses_the_query_string_and_objects_are_json_encoded():
    rec = Recorder()
    await make(rec, method="DELETE").execute({"orderId": "1", "filter": {"a": 1}}, CTX)
    assert rec.requests[0].url.params["filter"] == '{"a":1}'


async def test_the_catalogue_query_string_is_kept():
    rec = Recorder()
    await make(rec, url="https://api.example.test/v1/orders/{orderId}?expand=items").execute(
        {"orderId": "1"}, CTX
    )
    assert rec.requests[0].url.params.multi_items() == [("expand", "items"), ("accountId", "acc-42")]


async def test_a_pinned_parameter_replaces_what_the_model_wrote_and_the_model_never_sees_it():
    rec = Recorder()
    tool = make(rec)
    await tool.execute({"orderId": "1", "accountId": "model-chosen"}, CTX)
    await tool.execute({"orderId": "1", "accountId": ""}, CTX)
    assert [r.url.params["accountId"] for r in rec.requests] == ["acc-42", "acc-42"]
    assert model_parameters(tool.spec)["required"] == ["orderId"]
    assert "accountId" not in tool.parameters["properties"]


async def test_a_claim_pinned_parameter_comes_from_the_callers_claims_whatever_the_body_or_model_say():
    rec = Recorder()
    tool = make(rec, http={"contextParams": {"accountId": "claim:custom:accountId"}})
    ctx = ToolContext(
        "c1", "alice", context={"accountId": "acct-2002"}, claims={"custom:accountId": "acct-1001"}
    )
    registry = ToolRegistry([tool])  # the registry lets the pinned name through: replaced, not refused
    arguments = '{"orderId": "1", "accountId": "acct-2002"}'
    call = ToolCall(id="c1", function=FunctionCall(name="order_tool", arguments=arguments))
    result = await registry.execute(call, ctx)
    assert result.success and [r.url.params["accountId"] for r in rec.requests] == ["acct-1001"]


@pytest.mark.parametrize(
    ("source", "ctx", "says"),
    [
        ("context", ToolContext("c1", "alice", context={"accountId": {"x": 1}}), "the app's context"),
        ("claim:custom:accountId", CTX, "the caller's sign-in (claim custom:accountId)"),
    ],
)
async def test_a_pinned_parameter_its_source_lacks_fails_the_call_without_calling_the_api(source, ctx, says):
    rec = Recorder()
    result = await make(rec, http={"contextParams": {"accountId": source}}).execute(
        {"orderId": "1", "accountId": "acct-2002"}, ctx
    )
    assert not result.success and rec.requests == []
    assert result.error == f"accountId comes from {says}, which does not carry it; the tool was not called"


async def test_the_assertion_names_the_caller_for_this_tools_origin_and_verifies_against_the_key_set():
    rec = Recorder()
    ctx = ToolContext("conv-7", "alice", roles=("user",), context={"accountId": "acc-42"})
    await make(rec, url="https://API.example.test:443/v1/orders/{orderId}").execute({"orderId": "1"}, ctx)
    token = rec.requests[0].headers["x-caller-assertion"]
    (key,) = jwt.PyJWKSet.from_dict(SIGNER.jwks()).keys
    claims = jwt.decode(
        token,
        key.key,
        algorithms=["ES256"],
        audience="https://api.example.test",
        issuer="rag-orchestrator-test",
    )
    assert jwt.get_unverified_header(token)["kid"] == key.key_id
    assert (claims["sub"], claims["roles"], claims["conversationId"], claims["tool"]) == (
        "alice",
        ["user"],
        "conv-7",
        "order_tool",
    )
    assert claims["exp"] - claims["iat"] == 60 and len(claims["jti"]) == 32


async def test_caller_token_forwards_the_callers_own_token_and_none_sends_no_identity():
    rec = Recorder()
    forwarding = make(rec, http={"identity": "caller-token", "headers": {}})
    signed_in = ToolContext("c1", "alice", context={"accountId": "acc-42"}, caller_token="eyJ.caller.token")
    assert (await forwarding.execute({"orderId": "1"}, signed_in)).success
    refused = await forwarding.execute({"orderId": "1"}, CTX)  # dev mode: no token to forward
    assert not refused.success and "sign-in token" in refused.error
    assert (await make(rec, http={"identity": "none"}).execute({"orderId": "1"}, CTX)).success
    first, second = rec.requests
    assert (
        first.headers["authorization"] == "Bearer eyJ.caller.token"
        and "x-caller-assertion" not in first.headers
    )
    assert "x-caller-assertion" not in second.headers


async def test_an_api_that_echoes_the_assertion_does_not_hand_it_to_the_model():
    rec = Recorder(lambda r: httpx.Response(200, json={"seen": r.headers["x-caller-assertion"]}))
    result = await make(rec).execute({"orderId": "1"}, CTX)
    assert result.success and json.loads(result.result) == {"seen": "[redacted]"}


@pytest.mark.parametrize(
    "value",
    [
        "../admin",
        "..",
        "a/b",
        "a\\b",
        "evil.example@x",
        "http://evil.example",
        "a?b=1",
        "a#frag",
        "a\nb",
        " ",
        True,
    ],
)
async def test_arguments_cannot_change_the_host_or_leave_their_path_segment(value):
    rec = Recorder()
    result = await make(rec).execute({"orderId": value}, CTX)
    assert not result.success and "Invalid arguments" in result.error
    assert rec.requests == []


async def test_encoded_values_stay_inside_their_segment_on_the_catalogue_host():
    rec = Recorder()
    tool = make(rec, url="https://api.example.test/v1/orders/{orderId}/items")
    for value in ("%2e%2e", "evil.example:80", "x y&z=1", "ü"):
        assert (await tool.execute({"orderId": value}, CTX)).success
    assert {(r.url.scheme, r.url.host, r.url.port) for r in rec.requests} == {
        ("https", "api.example.test", None)
    }
    assert [r.url.raw_path.split(b"?")[0] for r in rec.requests] == [
        b"/v1/orders/%252e%252e/items",
        b"/v1/orders/evil.example%3A80/items",
        b"/v1/orders/x%20y%26z%3D1/items",
        b"/v1/orders/%C3%BC/items",
    ]


async def test_a_preview_tool_hands_the_model_preview_sent_and_the_payload_to_metadata():
    rec = Recorder(lambda r: httpx.Response(200, json={"steps": ["a", "b"]}))
    result = await make(rec, preview="workflow_preview").execute({"orderId": "1"}, CTX)
    assert result.success and result.result == "preview_sent" and result.for_model() == "preview_sent"
    assert result.preview == ToolPreview(type="workflow_preview", payload={"steps": ["a", "b"]})


async def test_text_and_empty_answers():
    rec = Recorder(lambda r: httpx.Response(200, text="plain words"))
    assert (await make(rec).execute({"orderId": "1"}, CTX)).result == "plain words"
    rec = Recorder(lambda r: httpx.Response(204))
    assert json.loads((await make(rec).execute({"orderId": "1"}, CTX)).result) == {"status": 204}


async def test_resolved_secrets_never_reach_the_model():
    rec = Recorder(lambda r: httpx.Response(200, json={"echo": r.headers["authorization"]}))
    result = await make(rec).execute({"orderId": "1"}, CTX)
    assert "s3cret-token-value" not in result.result and "[redacted]" in result.result


ODD_SECRET = 'Zk9/q+T0ken&R3al<Secret>=="x\\y'  # what JSON encoders escape: / & < > " \\


def escaped(style: str, text: str) -> str:
    """`text` as a JSON string, the way one encoder or another writes it."""
    encoded = json.dumps(text)
    if style == "php":  # json_encode escapes "/"
        return encoded.replace("/", "\\/")
    if style == "go":  # encoding/json escapes < > & for HTML
        return encoded.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
    if style == "every-char":  # any character may be \\uXXXX, in either case
        return '"' + "".join(f"\\u{ord(c):04X}" for c in text) + '"'
    return encoded


def odd_secret_tool(recorder, **extra) -> HttpTool:
    lookup = {"TOKEN": ODD_SECRET}.get
    entry = spec().model_dump(by_alias=True, exclude_none=True) | extra
    parsed = parse_catalog({"tools": [entry]}, lookup=lookup).tools[0]
    return HttpTool(parsed, pool=ClientPool(httpx.MockTransport(recorder)), lookup=lookup, assertions=SIGNER)


@pytest.mark.parametrize("style", ["plain", "php", "go", "every-char"])
async def test_an_api_echoing_a_secret_json_escaped_hands_back_none_of_it(style):
    """Redacting the text as received missed an escaped secret, and writing the JSON anew unescaped it:
    the client's ToolCallResult and the model both had it whole."""

    def echo(request: httpx.Request) -> httpx.Response:
        body = '{"youSent": ' + escaped(style, request.headers["authorization"]) + "}"
        return httpx.Response(200, content=body.encode(), headers={"content-type": "application/json"})

    result = await odd_secret_tool(Recorder(echo)).execute({"orderId": "1"}, CTX)
    assert result.success and json.loads(result.result) == {"youSent": "Bearer [redacted]"}
    preview = await odd_secret_tool(Recorder(echo), preview="workflow_preview").execute({"orderId": "1"}, CTX)
    assert preview.preview is not None and preview.preview.payload == {"youSent": "Bearer [redacted]"}


@pytest.mark.parametrize("padding", [700, 760, 780, 790, 795, 799])
async def test_an_error_body_cut_inside_a_secret_hands_the_model_no_part_of_it(padding):
    """An error body is read to 800 bytes for its excerpt; a secret the cut split was not redacted, and
    collapsing the whitespace brought its start into the excerpt the model reads."""
    body = '{"detail": "' + " " * padding + "auth was Bearer " + ODD_SECRET + ' and more"}'
    rec = Recorder(lambda r: httpx.Response(401, content=body.encode()))
    result = await odd_secret_tool(rec).execute({"orderId": "1"}, CTX)
    assert not result.success and "HTTP 401" in result.error
    pieces = {ODD_SECRET[i : i + 6] for i in range(len(ODD_SECRET) - 5)}
    assert not [p for p in pieces if p in result.error], result.error


@pytest.mark.parametrize(
    ("response", "says", "hides"),
    [
        (httpx.Response(500, json={"trace": "db.py line 12"}), "HTTP 500 Internal Server Error", "db.py"),
        (httpx.Response(503), "HTTP 503", None),
        (httpx.Response(404, json={"message": "no order 1"}), 'HTTP 404 Not Found: {"message":', None),
        (
            httpx.Response(302, headers={"location": "http://169.254.169.254/"}),
            "redirects are not followed",
            None,
        ),
    ],
)
async def test_non_2xx_answers_are_unsuccessful_results(response, says, hides):
    rec = Recorder(lambda r: response)
    result = await make(rec).execute({"orderId": "1"}, CTX)
    assert not result.success and says in result.error
    assert hides is None or hides not in result.error
    assert len(rec.requests) == 1  # a redirect is not followed


async def test_an_oversized_answer_is_unsuccessful_with_or_without_content_length():
    declared = Recorder(lambda r: httpx.Response(200, content=b"x" * 5000))

    async def chunks():
        for _ in range(10):
            yield b"x" * 600

    streamed = Recorder(lambda r: httpx.Response(200, content=chunks()))
    for rec in (declared, streamed):
        result = await make(rec, max_bytes=1024).execute({"orderId": "1"}, CTX)
        assert not result.success and result.error == "The response was larger than 1024 bytes"


async def test_a_timeout_is_unsuccessful():
    async def slow(request):
        await asyncio.sleep(30)

    rec = Recorder(slow)
    result = await make(rec, http={"timeoutSeconds": 0.05}).execute({"orderId": "1"}, CTX)
    assert not result.success and result.error == "The service did not answer within 0.05s"


async def test_connection_errors_are_unsuccessful():
    def refuse(request):
        raise httpx.ConnectError("connection refused")

    result = await make(Recorder(refuse)).execute({"orderId": "1"}, CTX)
    assert not result.success and result.error == "Could not reach the service (ConnectError)"


async def test_invalid_arguments_are_refused_before_any_request():
    rec = Recorder()
    result = await make(rec).execute({"orderId": 1.5, "status": 3}, CTX)
    assert not result.success and "status" in result.error and rec.requests == []


async def test_clients_are_shared_per_event_loop():
    pool = ClientPool()
    first, second = pool.client(), pool.client()
    assert first is second and not first.follow_redirects
    assert first.trust_env is False
