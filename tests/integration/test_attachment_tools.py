"""attachmentParams on the local stack: the model names an attachment by id, the HTTP tool (the fake tool
API) receives a presigned GET URL and reads the file from the moto server; the model never sees the URL."""

from __future__ import annotations

import hashlib
import json

import pytest
from fastapi.testclient import TestClient

from rag_orchestrator.api.app import ALL_ROUTERS, create_app
from tests.fakes.fake_tool_api import FakeToolAPI
from tests.fakes.llm_script import text_reply, tool_call_reply
from tests.fakes.sse import parse_sse
from tests.integration.test_attachment_turns import ALICE, BASE, BOB, new_conversation, upload

pytestmark = pytest.mark.integration

NOTES = b"# Notes\nThe lamp was replaced on the third of March."


@pytest.fixture
def tool_api():
    with FakeToolAPI() as api:
        yield api


@pytest.fixture
def client(aws_stack, fake_llm, tool_api, tmp_path, monkeypatch) -> TestClient:
    catalog = {
        "tools": [
            {
                "name": "read_file",
                "description": "Read an attached file and describe it",
                "core": True,
                "inputSchema": {
                    "type": "object",
                    "properties": {"file": {"type": "string"}},
                    "required": ["file"],
                    "additionalProperties": False,
                },
                "http": {"method": "POST", "url": f"{tool_api.url}/fetch", "attachmentParams": ["file"]},
            }
        ]
    }
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps(catalog))
    monkeypatch.setenv("TOOL_CATALOG_PATH", str(path))
    monkeypatch.setenv("LOOP_INITIAL_RAG", "false")
    monkeypatch.setenv("MEMORY_ENABLED", "false")
    for key, value in fake_llm.settings_for("openai_compatible", model_max_retries=0).items():
        monkeypatch.setenv(key.upper(), str(value))
    return TestClient(create_app(ALL_ROUTERS))


def turn(c: TestClient, cid: str) -> list:
    with c.stream(
        "POST", f"{BASE}/{cid}/messages/stream", json={"message": "Read my notes"}, headers=ALICE
    ) as response:
        assert response.status_code == 200
        events = parse_sse("".join(response.iter_text()))
    assert events[-1].event == "Completed", events[-1].data
    return events


def test_the_tool_reads_the_file_through_a_presigned_url_and_the_model_sees_only_the_id(
    client, fake_llm, tool_api, aws_stack
):
    cid = new_conversation(client)
    aid = upload(client, cid, "notes.md", "text/markdown", NOTES)
    fake_llm.script(tool_call_reply("read_file", {"file": aid}), text_reply("Your notes are about a lamp."))

    events = turn(client, cid)

    (sent,) = tool_api.requests
    url = sent["body"]["file"]
    assert url.startswith(aws_stack["endpoint"]) and "X-Amz-Signature=" in url and aid in url
    assert tool_api.fetched == [NOTES]  # the tool could GET the file from the moto server
    start = next(e.data for e in events if e.event == "ToolCallStart")
    assert start["arguments"] == {"file": aid}  # the id, as the model sent it
    result = next(e.data for e in events if e.event == "ToolCallResult")
    assert result["success"] is True
    assert json.loads(result["result"]) == {
        "file": aid,  # the API quoted the URL back; the id stands in for it
        "bytes": len(NOTES),
        "sha256": hashlib.sha256(NOTES).hexdigest(),
    }
    model_saw = json.dumps(fake_llm.requests[1]["messages"])
    assert "X-Amz-" not in model_saw and aws_stack["endpoint"] not in model_saw
    stored = client.get(f"{BASE}/{cid}/messages", headers=ALICE).json()["items"]
    assert "X-Amz-" not in json.dumps(stored)


def test_an_id_the_caller_does_not_own_here_is_an_unsuccessful_result_and_nothing_is_called(
    client, fake_llm, tool_api
):
    bobs = upload(client, new_conversation(client, BOB), "bob.md", "text/markdown", b"# Bob", BOB)
    cid = new_conversation(client)
    elsewhere = upload(client, new_conversation(client), "other.md", "text/markdown", b"# Other")
    never = client.post(
        f"{BASE}/{cid}/attachments",
        json={"fileName": "later.md", "contentType": "text/markdown", "sizeBytes": 5},
        headers=ALICE,
    ).json()["attachmentId"]
    for aid, message in (
        (bobs, f"Attachment not found: {bobs}"),
        (elsewhere, f"Attachment not found: {elsewhere}"),
        ("notes.md", "Attachment not found: notes.md"),
        (never, f"Attachment {never} has not been uploaded"),
    ):
        fake_llm.reset()
        fake_llm.requests.clear()
        fake_llm.script(tool_call_reply("read_file", {"file": aid}), text_reply("I cannot read it."))
        result = next(e.data for e in turn(client, cid) if e.event == "ToolCallResult")
        assert result["success"] is False
        assert json.loads(result["result"]) == {"error": message, "success": False}
    assert tool_api.requests == []
