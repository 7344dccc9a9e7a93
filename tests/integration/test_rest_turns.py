"""A turn answered whole (`POST …/messages`, the REST route) runs as a streamed one does, its events in
the event log: a reload's `GET …/ui-stream` finds it running and follows it to its end, and
`POST …/turns/{turnId}/cancel` stops it, while its own response still waits for the whole answer."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.fakes.llm_script import text_reply

pytestmark = pytest.mark.integration

ANSWER = "Run the suite with make test, then read its report."


def asked(dev_app, headers: dict[str, str]) -> tuple[str, threading.Thread, dict[str, Any]]:
    """A REST turn of a new conversation of the caller, its model held after its first chunk, answered in
    a thread of its own."""
    cid = httpx.post(f"{dev_app.url}/api/v1/chat/conversations", json={}, headers=headers).json()[
        "conversationId"
    ]
    dev_app.llm.script(text_reply(ANSWER, chunks=4, gate_after=1))
    answer: dict[str, Any] = {}

    def post() -> None:
        url = dev_app.conversation_url(cid, "messages")
        answer["response"] = httpx.post(
            url, json={"message": "How do I run the tests?"}, headers=headers, timeout=60
        )

    thread = threading.Thread(target=post)
    thread.start()
    wait(lambda: bool(dev_app.llm.requests))
    time.sleep(1.2)  # its first chunk logged (the log is written once a second)
    return cid, thread, answer


def wait(condition: Callable[[], bool], seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)


def resumed(dev_app, cid: str, headers: dict[str, str]) -> Any:
    """The reload's GET …/ui-stream, as a stream."""
    return httpx.stream("GET", dev_app.conversation_url(cid, "ui-stream"), headers=headers, timeout=30)


def caller() -> dict[str, str]:
    return {"X-Caller-Id": f"rest-{uuid.uuid4().hex[:8]}"}


def parts(body: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: {")]


def test_a_rest_turn_is_resumed_by_a_reload_and_followed_to_its_end(dev_app):
    headers = caller()
    cid, thread, answer = asked(dev_app, headers)
    with resumed(dev_app, cid, headers) as stream:
        status = stream.status_code
        dev_app.llm.open_gate()
        body = stream.read().decode()
    thread.join(30)
    assert status == 200  # not 204: a turn is running
    seen = parts(body)
    assert seen[0]["type"] == "start" and seen[-1]["type"] == "finish"
    assert "".join(p["delta"] for p in seen if p["type"] == "text-delta") == ANSWER
    response = answer["response"]
    assert response.status_code == 200 and response.json()["message"] == ANSWER
    assert seen[0]["messageMetadata"]["turnId"] == response.json()["turnId"]
    assert seen[-1]["messageMetadata"]["messageId"] == response.json()["messageId"]


def test_a_rest_turn_is_cancelled_and_answers_with_what_it_had(dev_app):
    headers = caller()
    cid, thread, answer = asked(dev_app, headers)
    with resumed(dev_app, cid, headers) as stream:
        turn_id = parts(next(stream.iter_text()))[0]["messageMetadata"]["turnId"]
    cancelled = httpx.post(dev_app.conversation_url(cid, f"turns/{turn_id}/cancel"), headers=headers)
    assert cancelled.status_code == 202, cancelled.text
    thread.join(30)
    response = answer["response"]
    assert response.status_code == 200 and response.json()["finishReason"] == "cancelled"
    assert ANSWER.startswith(response.json()["message"]) and response.json()["message"] != ANSWER
    dev_app.llm.open_gate()
