"""Durable turns over real HTTP: streaming app processes sharing one moto table and one Chroma server.

A turn's events are logged as it runs; a client that drops its connection resumes on another process
with Last-Event-ID; a client that vanishes still gets its answer stored; a cancel and a deadline stop a
turn and keep what it answered; a killed process leaves a lock that ends with the turn's deadline.
The fake LLM's Gate holds a reply mid-answer for as long as a test needs.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx
import pytest

from devserver.stack import LOCAL_DEFAULTS, ROOT
from tests.fakes.fake_llm import FakeLLM
from tests.fakes.llm_script import split, text_reply
from tests.fakes.sse import SSEComment, SSEMessage, iter_sse
from tests.integration.apps import AppProcess, app_env

pytestmark = pytest.mark.integration

ALICE = {"X-Caller-Id": "alice"}
ANSWER = "The suite runs with make test; the dev server starts with make dev on port 8000."
PIECES = split(ANSWER, 12)
TERMINAL = ("Completed", "Error")


@dataclass
class Stack:
    llm: FakeLLM
    a: AppProcess  # two instances of the streaming function
    b: AppProcess


@pytest.fixture(scope="module")
def stack(moto_server, chroma_server, servers_dir):
    from devserver.resources import create_resources
    from rag_orchestrator.config import load_settings
    from tests.integration.knowledge import ingest

    with pytest.MonkeyPatch.context() as env:
        env.setenv("AWS_ENDPOINT_URL", moto_server.url)
        env.setenv("CONVERSATION_STORAGE", "dynamodb")
        env.setenv("CHROMA_URL", chroma_server.url)
        env.setenv("CHROMA_COLLECTION", "durable-turns")
        env.setenv("RAG_SIMILARITY_THRESHOLD", "0.05")
        create_resources(LOCAL_DEFAULTS["CONVERSATIONS_TABLE"], [LOCAL_DEFAULTS["TRANSCRIPTS_BUCKET"]])
        ingest([{"documentId": "guide", "title": "Guide", "text": ANSWER}], load_settings())
        with FakeLLM() as llm:
            settings = {"TURN_DEADLINE_MARGIN_SECONDS": "1", "SSE_KEEPALIVE_SECONDS": "1"}
            a = AppProcess("chat_stream", app_env(llm, **settings), servers_dir / "durable-a.log")
            b = AppProcess("chat_stream", app_env(llm, **settings), servers_dir / "durable-b.log")
            try:
                yield Stack(llm, a, b)
            finally:
                a.stop()
                b.stop()


@pytest.fixture(autouse=True)
def quiet_llm(stack):
    stack.llm.reset()


def new_conversation(caller: str = "alice") -> str:
    from rag_orchestrator.api.deps import process_aws
    from rag_orchestrator.config import load_settings
    from rag_orchestrator.conversations.factory import create_store
    from rag_orchestrator.domain.conversations import Conversation

    store = create_store(load_settings(), process_aws())
    return asyncio.run(store.create(Conversation(caller_id=caller))).conversation_id


def delete_conversation(conversation_id: str, caller: str = "alice") -> None:
    """As DELETE on the REST function does (these processes are streaming functions)."""
    from rag_orchestrator.api.deps import process_aws
    from rag_orchestrator.config import load_settings
    from rag_orchestrator.conversations.factory import create_store

    asyncio.run(create_store(load_settings(), process_aws()).soft_delete(conversation_id, caller))


def transcript(conversation_id: str, caller: str = "alice") -> list:
    from rag_orchestrator.api.deps import process_aws
    from rag_orchestrator.config import load_settings
    from rag_orchestrator.conversations.factory import create_store

    store = create_store(load_settings(), process_aws())
    return asyncio.run(store.messages(conversation_id, caller, limit=100)).items


def answered(conversation_id: str, timeout: float = 30.0) -> list:
    """The transcript once the turn's answer is stored (the turn ends in its own time)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        messages = transcript(conversation_id)
        if messages and messages[-1].role == "assistant":
            return messages
        time.sleep(0.2)
    raise AssertionError(f"no answer stored within {timeout}s")


@contextmanager
def sse(method: str, url: str, **options) -> Iterator[tuple[httpx.Response, Iterator]]:
    """A stream opened over HTTP; leaving the block drops the connection."""
    with httpx.Client(timeout=30) as client, client.stream(method, url, **options) as response:
        yield response, iter_sse(response.iter_lines())


def read_until(
    items: Iterator, done: Callable[[list[SSEMessage]], bool], limit: float = 60
) -> list[SSEMessage]:
    """Messages until `done(messages)`; keep-alives arrive every second, so a stalled turn fails here."""
    got: list[SSEMessage] = []
    give_up = time.monotonic() + limit
    for item in items:
        if isinstance(item, SSEMessage):
            got.append(item)
            if done(got):
                break
        assert time.monotonic() < give_up, f"stalled after {[(m.id, m.event) for m in got]}"
    return got


def chunks(messages: list[SSEMessage]) -> list[str]:
    return [m.data["content"] for m in messages if m.event == "ResponseChunk"]


def ended(messages: list[SSEMessage]) -> bool:
    return messages[-1].event in TERMINAL


def start_turn(stack_url: str, conversation_id: str, headers: dict | None = None):
    return sse(
        "POST",
        f"{stack_url}/api/v1/chat/conversations/{conversation_id}/messages/stream",
        json={"message": "How do I run the tests?"},
        headers={**ALICE, **(headers or {})},
    )


def turn_url(base: str, conversation_id: str, turn_id: str, action: str) -> str:
    return f"{base}/api/v1/chat/conversations/{conversation_id}/turns/{turn_id}/{action}"


def test_a_dropped_stream_resumes_on_another_process_with_exactly_the_missing_events(stack):
    stack.llm.script(text_reply(ANSWER, chunks=12, gate_after=6))
    cid = new_conversation()
    with start_turn(stack.a.url, cid) as (response, items):
        assert response.status_code == 200
        first = read_until(items, lambda got: len(chunks(got)) == 3)
    turn_id = first[0].data["turnId"]  # the client has dropped; the model waits at the gate

    with sse(
        "GET", turn_url(stack.b.url, cid, turn_id, "events"), headers={**ALICE, "Last-Event-ID": first[-1].id}
    ) as (response, items):
        assert response.status_code == 200
        replayed = read_until(items, lambda got: len(chunks(first + got)) == 6)  # from the log
        assert isinstance(next(items), SSEComment)  # the turn is quiet: a keep-alive comes
        stack.llm.open_gate()
        followed = read_until(items, ended)  # live, as the other process logs them
        assert list(items) == []  # the stream closes after its terminal event

    seen = first + replayed + followed
    assert [m.id for m in seen] == [f"{turn_id}:{n}" for n in range(1, len(seen) + 1)]
    assert [m.event for m in seen].count("Completed") == 1 and seen[-1].event == "Completed"
    assert seen[-1].data["finishReason"] == "stop"
    assert all(m.data["turnId"] == turn_id for m in seen)
    assert "".join(chunks(seen)) == ANSWER
    stored = answered(cid)
    assert stored[-1].content == ANSWER and not stored[-1].interrupted


def test_a_turn_whose_client_vanished_is_stored_whole_and_replays_from_the_start(stack):
    stack.llm.script(text_reply(ANSWER, chunks=12, gate_after=6))
    cid = new_conversation()
    with start_turn(stack.a.url, cid) as (_, items):
        first = read_until(items, lambda got: len(chunks(got)) == 2)
    stack.llm.open_gate()

    stored = answered(cid)
    assert [m.role for m in stored] == ["user", "assistant"]
    assert stored[-1].content == ANSWER and not stored[-1].interrupted

    turn_id = first[0].data["turnId"]
    with sse("GET", turn_url(stack.b.url, cid, turn_id, "events") + "?after=0", headers=ALICE) as (r, items):
        assert r.status_code == 200
        replayed = [m for m in items if isinstance(m, SSEMessage)]  # a finished turn: replay, then close
    assert [m.id for m in replayed] == [f"{turn_id}:{n}" for n in range(1, len(replayed) + 1)]
    assert [m.data for m in replayed[: len(first)]] == [m.data for m in first]
    assert "".join(chunks(replayed)) == ANSWER and replayed[-1].event == "Completed"

    # Deleted, the conversation's answer is no longer replayed, though its log lives on an hour.
    delete_conversation(cid)
    gone = httpx.get(turn_url(stack.b.url, cid, turn_id, "events") + "?after=0", headers=ALICE)
    assert (
        gone.status_code == 404
        and gone.json()["error"] == "Conversation not found"
        and ANSWER not in gone.text
    )


@pytest.mark.parametrize("where", ["same process", "another process"])
def test_cancel_mid_answer_keeps_the_partial_text_marked_interrupted(stack, where):
    stack.llm.script(text_reply(ANSWER, chunks=12, gate_after=4))
    cid = new_conversation()
    canceller = stack.a if where == "same process" else stack.b
    with start_turn(stack.a.url, cid) as (_, items):
        first = read_until(items, lambda got: len(chunks(got)) == 4)
        turn_id = first[0].data["turnId"]
        response = httpx.post(turn_url(canceller.url, cid, turn_id, "cancel"), headers=ALICE)
        assert response.status_code == 202, response.text
        assert response.json() == {"conversationId": cid, "turnId": turn_id, "cancelRequested": True}
        rest = read_until(items, ended)  # the model never answers on: only the cancel ends this
    assert [m.event for m in rest][-1] == "Completed" and rest[-1].data["finishReason"] == "cancelled"
    assert "ResponseChunk" not in [m.event for m in rest]

    stored = transcript(cid)
    assert [m.role for m in stored] == ["user", "assistant"]
    assert stored[-1].content == "".join(PIECES[:4]) and stored[-1].interrupted
    assert rest[-1].data["messageId"] == stored[-1].message_id

    again = httpx.post(turn_url(canceller.url, cid, turn_id, "cancel"), headers=ALICE)
    assert again.status_code == 409 and again.json()["error"] == "Turn ended"


def test_turns_of_other_callers_unknown_turns_and_bad_event_ids_are_refused(stack):
    stack.llm.script(text_reply("Short answer."))
    cid = new_conversation()
    with start_turn(stack.a.url, cid) as (_, items):
        turn_id = read_until(items, ended)[0].data["turnId"]
    mallory = {"X-Caller-Id": "mallory"}
    for method, action, headers in [
        ("GET", "events", mallory),
        ("POST", "cancel", mallory),
        ("GET", "events", ALICE | {"Last-Event-ID": "x"}),
        ("GET", "events", ALICE | {"Last-Event-ID": f"{turn_id}:{'9' * 120}"}),  # malformed by its length too
    ]:
        response = httpx.request(method, turn_url(stack.b.url, cid, turn_id, action), headers=headers)
        expected = 400 if headers is not mallory else 404
        assert response.status_code == expected, (method, action, response.text)
        assert set(response.json()) == {"error", "message", "timestamp", "requestId"}
    for method, action in [("GET", "events"), ("POST", "cancel")]:
        response = httpx.request(method, turn_url(stack.b.url, cid, "01UNKNOWNTURN", action), headers=ALICE)
        assert response.status_code == 404
    other = httpx.get(
        turn_url(stack.b.url, cid, turn_id, "events"), headers=ALICE | {"Last-Event-ID": "01OTHER:3"}
    )
    assert other.status_code == 400


def test_a_stream_ends_at_its_lambda_deadline_and_keeps_its_partial_answer(stack):
    stack.llm.script(text_reply(ANSWER, chunks=12, gate_after=3))
    cid = new_conversation()
    # What the Lambda Web Adapter sends: the invocation's context, its deadline in epoch milliseconds.
    context = {"request_id": "r-1", "deadline": int(time.time() * 1000) + 4000, "invoked_function_arn": "arn"}
    with start_turn(stack.a.url, cid, {"x-amzn-lambda-context": json.dumps(context)}) as (_, items):
        events = read_until(items, ended)
    assert events[-1].event == "Completed" and events[-1].data["finishReason"] == "deadline"
    assert "".join(chunks(events)) == "".join(PIECES[:3])
    stored = transcript(cid)
    assert stored[-1].content == "".join(PIECES[:3]) and stored[-1].interrupted


def test_a_rest_turn_slower_than_its_deadline_answers_deadline_and_frees_the_conversation(stack, servers_dir):
    settings = {"TURN_DEFAULT_BUDGET_SECONDS": "3", "TURN_DEADLINE_MARGIN_SECONDS": "1"}
    api = AppProcess("api", app_env(stack.llm, **settings), servers_dir / "durable-api.log")
    try:
        base = f"{api.url}/api/v1/chat/conversations"
        cid = httpx.post(base, json={}, headers=ALICE).json()["conversationId"]
        stack.llm.script(
            text_reply("Warm."), text_reply(ANSWER, chunks=12, gate_after=2), text_reply("Next answer.")
        )
        assert httpx.post(
            f"{base}/{cid}/messages", json={"message": "hi"}, headers=ALICE, timeout=30
        ).is_success
        cut = httpx.post(f"{base}/{cid}/messages", json={"message": "How?"}, headers=ALICE, timeout=30)
        assert cut.status_code == 200, cut.text
        assert cut.json()["finishReason"] == "deadline" and cut.json()["message"] == "".join(PIECES[:2])
        assert cut.json()["turnId"]
        following = httpx.post(f"{base}/{cid}/messages", json={"message": "And?"}, headers=ALICE, timeout=30)
        assert following.status_code == 200 and following.json()["finishReason"] == "stop"
        stored = httpx.get(f"{base}/{cid}/messages", headers=ALICE).json()["items"]
        assert [(m["role"], m["interrupted"]) for m in stored] == [
            ("user", False),
            ("assistant", False),
            ("user", False),
            ("assistant", True),
            ("user", False),
            ("assistant", False),
        ]
    finally:
        api.stop()


def test_under_mangum_a_rest_turn_takes_its_deadline_from_the_lambda_context(stack, monkeypatch):
    from devserver.invoke import LambdaContext, load_handler_module

    for key, value in stack.llm.settings_for("openai_compatible").items():
        monkeypatch.setenv(key.upper(), str(value))
    monkeypatch.setenv("TURN_DEADLINE_MARGIN_SECONDS", "1")
    module = load_handler_module("api")  # as Lambda loads it, settings as set here
    created = json.loads((ROOT / "events" / "api_create_conversation.json").read_text())
    created["headers"] |= {"x-caller-id": "alice", "content-length": str(len(created["body"]))}
    response = module.handler(
        created, LambdaContext(function_name="rag-orchestrator-api", timeout_seconds=29)
    )
    cid = json.loads(response["body"])["conversationId"]

    def turn(message: str, timeout_seconds: int) -> dict:
        path = f"/api/v1/chat/conversations/{cid}/messages"
        body = json.dumps({"message": message})
        event = created | {"rawPath": path, "body": body, "pathParameters": {"proxy": path[1:]}}
        event["headers"] = created["headers"] | {"content-length": str(len(body))}
        event["requestContext"] = created["requestContext"] | {
            "http": created["requestContext"]["http"] | {"path": path}
        }
        context = LambdaContext(function_name="rag-orchestrator-api", timeout_seconds=timeout_seconds)
        answer = module.handler(event, context)
        assert answer["statusCode"] == 200, answer
        return json.loads(answer["body"])

    stack.llm.script(text_reply("Warm."), text_reply(ANSWER, chunks=12, gate_after=2))
    assert turn("hi", 29)["finishReason"] == "stop"
    cut = turn("How?", 5)  # 5 s left in the function: the turn ends 1 s before
    assert cut["finishReason"] == "deadline" and cut["message"] == "".join(PIECES[:2])


def test_a_killed_process_leaves_a_lock_that_ends_with_the_turns_deadline(stack, servers_dir):
    import boto3

    doomed = AppProcess(
        "chat_stream", app_env(stack.llm, TURN_DEADLINE_MARGIN_SECONDS="1"), servers_dir / "durable-c.log"
    )
    stack.llm.script(text_reply("Warm."), text_reply(ANSWER, chunks=12, gate_after=2), text_reply("After."))
    with start_turn(doomed.url, new_conversation()) as (_, items):
        assert read_until(items, ended)[-1].event == "Completed"  # a warm process, as most are
    cid = new_conversation()
    started = time.time()
    context = {"request_id": "r-2", "deadline": int(started * 1000) + 8000, "invoked_function_arn": "arn"}
    with start_turn(doomed.url, cid, {"x-amzn-lambda-context": json.dumps(context)}) as (_, items):
        first = read_until(items, lambda got: len(chunks(got)) == 2)
        doomed.kill()  # as Lambda does at the function's timeout
    turn_id = first[0].data["turnId"]

    table = boto3.client("dynamodb").get_item(
        TableName=LOCAL_DEFAULTS["CONVERSATIONS_TABLE"], Key={"PK": {"S": f"CONV#{cid}"}, "SK": {"S": "META"}}
    )
    lock_until = int(table["Item"]["turnLockUntil"]["N"])
    assert lock_until <= started + 8 + 1 + 1  # the deadline plus the margin (rounded up), not 330 s
    with start_turn(stack.b.url, cid) as (response, _):
        assert response.status_code == 409  # still the killed turn's, until then

    with sse(
        "GET", turn_url(stack.b.url, cid, turn_id, "events"), headers={**ALICE, "Last-Event-ID": first[-1].id}
    ) as (
        _,
        items,
    ):
        rest = read_until(items, ended)  # its terminal event never comes: the follower gives up
    assert rest[-1].event == "Error" and rest[-1].id == f"{turn_id}:{int(first[-1].id.split(':')[1]) + 1}"

    while int(time.time()) <= lock_until:  # the lease holds through its last second
        time.sleep(0.2)
    with start_turn(stack.b.url, cid) as (response, items):
        assert response.status_code == 200
        assert read_until(items, ended)[-1].data["finishReason"] == "stop"
