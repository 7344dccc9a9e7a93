"""attachmentParams without I/O: the catalogue's rules, and HttpTool swapping an id for a presigned URL
(a fake link maker, httpx.MockTransport as the tool's API) that the model never reads back."""

from __future__ import annotations

import json
from urllib.parse import quote

import httpx
import pytest

from rag_orchestrator.errors import AttachmentNotFound, ConfigError
from rag_orchestrator.tools.assertion import AssertionSigner
from rag_orchestrator.tools.base import ToolContext
from rag_orchestrator.tools.catalog import parse_catalog
from rag_orchestrator.tools.http_tool import ATTACHMENT_PARAM, ClientPool, HttpTool

CTX = ToolContext(conversation_id="c1", caller_id="alice")
AID = "9b2e7c1a-5d4f-4e3b-8a6c-1f0e2d3c4b5a"
SIGNATURE = "0f" * 32
URL = (
    f"http://127.0.0.1:5001/bucket/attachments/alice/c1/{AID}?X-Amz-Algorithm=AWS4-HMAC-SHA256"
    f"&X-Amz-Credential=local%2F20261123%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Expires=300&X-Amz-Signature={SIGNATURE}"
)


def entry(method: str = "POST", url: str = "https://api.example.test/scan", **http) -> dict:
    return {
        "name": "scan",
        "description": "Scan a receipt",
        "inputSchema": {
            "type": "object",
            "properties": {
                "receipt": {"type": "string"},
                "note": {"type": "string"},
                "n": {"type": "integer"},
            },
            "required": ["receipt"],
        },
        "http": {"method": method, "url": url, "attachmentParams": ["receipt"], **http},
    }


class Links:
    def __init__(self) -> None:
        self.asked: list[tuple[str, str, str]] = []

    async def link(self, caller_id: str, conversation_id: str, attachment_id: str) -> str:
        self.asked.append((caller_id, conversation_id, attachment_id))
        if attachment_id != AID:
            raise AttachmentNotFound(attachment_id)
        return URL


def tool(answer, links=None, **http) -> tuple[HttpTool, list[httpx.Request]]:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return answer(request)

    spec = parse_catalog({"tools": [entry(**http)]}).tools[0]
    pool = ClientPool(httpx.MockTransport(handler))
    return HttpTool(
        spec, pool=pool, links=links, assertions=AssertionSigner("test", lambda: None, ephemeral=True)
    ), sent


@pytest.mark.parametrize(
    "change, problem",
    [
        ({"attachmentParams": ["missing"]}, "missing is not a property of inputSchema"),
        ({"attachmentParams": ["n"]}, "n must be of type string"),
        ({"attachmentParams": ["receipt"], "contextParams": ["receipt"]}, "cannot also be in contextParams"),
        ({"attachmentParams": ["receipt", "receipt"]}, "each parameter may be named once"),
        ({"url": "https://api.example.test/scan/{receipt}"}, "cannot be a path parameter"),
        ({"attachmentParams": "receipt"}, "attachmentParams"),
    ],
)
def test_the_catalogue_refuses_attachment_params_that_cannot_work(change, problem):
    document = entry()
    document["http"].update(change)
    with pytest.raises(ConfigError, match=problem):
        parse_catalog({"tools": [document]})


def test_the_model_is_told_the_parameter_takes_an_attachment_id():
    spec = parse_catalog({"tools": [entry()]}).tools[0]
    assert HttpTool(spec).parameters["properties"]["receipt"] == {
        "type": "string",
        "description": ATTACHMENT_PARAM,
    }


async def test_the_tool_gets_the_url_in_the_body_and_the_answer_quoting_it_shows_the_id():
    def echo(request: httpx.Request) -> httpx.Response:
        url = json.loads(request.content)["receipt"]
        # As is, percent-encoded, JSON with escaped slashes (PHP's habit), and the signature alone.
        quoted = [url, quote(url, safe=""), url.replace("/", "\\/"), SIGNATURE]
        listed = ", ".join(f'"{q}"' for q in quoted)
        return httpx.Response(200, text=f'{{"seen": [{listed}]}}')

    links = Links()
    http_tool, sent = tool(echo, links)
    result = await http_tool.execute({"receipt": AID, "note": "hi"}, CTX)
    assert json.loads(sent[0].content) == {"receipt": URL, "note": "hi"}
    assert links.asked == [("alice", "c1", AID)]
    assert result.success and URL not in result.result and SIGNATURE not in result.result
    assert json.loads(result.result) == {"seen": [AID, AID, AID, AID]}


async def test_a_get_tool_gets_the_url_in_the_query_and_an_error_excerpt_never_quotes_it():
    http_tool, sent = tool(lambda r: httpx.Response(400, text=f"cannot fetch {r.url}"), Links(), method="GET")
    result = await http_tool.execute({"receipt": AID}, CTX)
    assert sent[0].url.params["receipt"] == URL
    assert (
        not result.success
        and "X-Amz-Signature" not in (result.error or "")
        and SIGNATURE not in (result.error or "")
    )


async def test_an_attachment_the_caller_cannot_use_is_an_unsuccessful_result_and_nothing_is_sent():
    http_tool, sent = tool(lambda r: httpx.Response(200), Links())
    result = await http_tool.execute({"receipt": "another-callers-id"}, CTX)
    assert (result.success, result.error, sent) == (False, "Attachment not found: another-callers-id", [])
    http_tool, sent = tool(lambda r: httpx.Response(200))  # no attachments where the tool runs
    result = await http_tool.execute({"receipt": AID}, CTX)
    assert not result.success and sent == []
