"""Traces of a real turn (moto, Chroma, the fake LLM) exported over OTLP/HTTP to a receiver on loopback
(devserver/traces.py decodes the SDK's protobuf): the span tree with the GenAI attributes, and no
prompt or answer text in any attribute unless OTEL_CAPTURE_CONTENT is on."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from devserver.traces import TraceReceiver, tree
from rag_orchestrator.config import load_settings
from tests.fakes.llm_script import (
    Stream,
    chunk,
    content_chunk,
    error_reply,
    finish_chunk,
    text_reply,
    tool_call_reply,
    usage_chunk,
)
from tests.integration.features import ask, client, fresh_caller, new_conversation, use_fake_llm
from tests.integration.knowledge import ingest

pytestmark = pytest.mark.integration
QUESTION = "Which port does the dev server listen on?"
ANSWER = "It listens on port 8000 [source:guide#0]."
GUIDE = "The dev server listens on port 8000. Start it with make dev."


@pytest.fixture(scope="module")
def receiver() -> Iterator[TraceReceiver]:
    found = TraceReceiver()
    yield found
    found.stop()


@pytest.fixture
def guide(receiver, aws_stack, chroma_url, fake_llm, monkeypatch) -> TraceReceiver:
    """Tracing on, to the receiver (cleared); the fake model; a knowledge base with the guide."""
    receiver.clear()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    monkeypatch.setenv("CHROMA_COLLECTION", f"traces-{id(monkeypatch)}")
    monkeypatch.setenv("RAG_SIMILARITY_THRESHOLD", "0.05")
    use_fake_llm(fake_llm, monkeypatch)
    ingest([{"documentId": "guide", "title": "Guide", "text": GUIDE, "source": "docs"}], load_settings())
    return receiver


@pytest.fixture
def traced(guide, fake_llm):
    """The guide, and a model that searches, then answers."""
    fake_llm.script(
        tool_call_reply("rag_search", {"query": "dev server port"}, call_id="call_a"),
        text_reply(ANSWER),
    )
    return guide


def one_turn(receiver: TraceReceiver) -> tuple[list[dict[str, Any]], str]:
    """A streamed turn; the spans of its trace (exported before the stream's end) and its conversation."""
    c, caller = client(), fresh_caller()
    cid = new_conversation(c, caller)
    messages = ask(c, cid, QUESTION, caller)
    assert messages[-1].event == "Completed"
    (root,) = [s for s in receiver.received() if s["name"] == "invoke_agent"]
    return [s for s in receiver.received() if s["traceId"] == root["traceId"]], cid


def named(spans: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [s for s in spans if s["name"] == name]


def test_a_tool_using_turn_is_one_trace_with_the_genai_spans(traced):
    spans, cid = one_turn(traced)
    by_id = {s["spanId"]: s for s in spans}
    (root,) = named(spans, "invoke_agent")
    assert root["parentSpanId"] == "" or root["parentSpanId"] not in by_id
    assert (
        root["attributes"].items()
        >= {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": "openai_compatible",
            "gen_ai.request.model": "fake-model",
            "gen_ai.conversation.id": cid,
            "gen_ai.usage.input_tokens": 20 + 11,
            "gen_ai.usage.output_tokens": 9 + 7,
            "gen_ai.response.finish_reasons": ["stop"],
        }.items()
    )
    calls = named(spans, "chat fake-model")
    assert len(calls) == 2 and all(c["kind"] == "client" for c in calls)
    calls.sort(key=lambda s: s["start"])
    first, second = calls
    usage = [
        (c["attributes"]["gen_ai.usage.input_tokens"], c["attributes"]["gen_ai.usage.output_tokens"])
        for c in calls
    ]
    assert usage == [(20, 9), (11, 7)]
    assert first["attributes"]["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert second["attributes"]["gen_ai.response.finish_reasons"] == ["stop"]
    assert all(c["attributes"]["gen_ai.operation.name"] == "chat" for c in calls)
    (tool,) = named(spans, "execute_tool rag_search")
    assert (
        tool["attributes"].items()
        >= {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "rag_search",
            "gen_ai.tool.call.id": "call_a",
        }.items()
    )
    assert first["end"] <= tool["start"] and tool["end"] <= second["start"]  # model, tool, model
    (retrieval,) = named(spans, "retrieval knowledge_base")
    assert retrieval["attributes"]["gen_ai.operation.name"] == "retrieval"
    assert retrieval["attributes"]["rag.retrieval.passages"] >= 1
    (embedding,) = [s for s in spans if s["name"].startswith("embeddings ")]
    assert embedding["attributes"]["gen_ai.operation.name"] == "embeddings"
    store = [s for s in spans if s["attributes"].get("db.system.name") == "aws.dynamodb"]
    operations = {s["attributes"]["db.operation.name"] for s in store}
    assert {"TransactWriteItems", "Query"} <= operations, operations
    # every span but the root hangs under the turn
    for span in spans:
        if span is not root:
            ancestor = span
            while ancestor["parentSpanId"] in by_id:
                ancestor = by_id[ancestor["parentSpanId"]]
            assert ancestor is root, tree(spans)
    # no prompt, answer or tool argument in any attribute while content capture is off
    text = repr([s["attributes"] for s in spans])
    for secret in (QUESTION, "dev server port", "listens on port 8000", GUIDE):
        assert secret not in text


def test_content_capture_puts_the_prompt_and_answer_in_the_model_spans(traced, monkeypatch):
    monkeypatch.setenv("OTEL_CAPTURE_CONTENT", "true")
    spans, _ = one_turn(traced)
    first, second = sorted(named(spans, "chat fake-model"), key=lambda s: s["start"])
    assert QUESTION in first["attributes"]["gen_ai.input.messages"]
    assert ANSWER in second["attributes"]["gen_ai.output.messages"]
    (tool,) = named(spans, "execute_tool rag_search")
    assert "dev server port" in tool["attributes"]["gen_ai.tool.call.arguments"]
    assert "8000" in tool["attributes"]["gen_ai.tool.call.result"]


def test_a_model_cut_at_its_token_limit_is_traced_with_the_providers_finish_reason(
    receiver, aws_stack, fake_llm, monkeypatch
):
    receiver.clear()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    monkeypatch.setenv("LOOP_INITIAL_RAG", "false")
    monkeypatch.setenv("MEMORY_ENABLED", "false")
    use_fake_llm(fake_llm, monkeypatch)
    cut = [
        chunk({"role": "assistant", "content": ""}),
        content_chunk("The answer is long and it goes on and"),
        finish_chunk("length"),
        usage_chunk(11, 4096),
    ]
    fake_llm.script(Stream(cut))
    c, caller = client(), fresh_caller()
    events = ask(c, new_conversation(c, caller), "Tell me everything.", caller)
    assert events[-1].event == "Completed"
    (chat,) = [s for s in receiver.received() if s["name"] == "chat fake-model"]
    assert chat["attributes"]["gen_ai.response.finish_reasons"] == ["length"]


def test_a_follow_ups_condensing_call_is_a_chat_span_of_its_turn_and_counted_in_it(
    guide, fake_llm, monkeypatch
):
    """The short call that makes a later turn's message a question of its own (CONDENSE_FOLLOW_UPS) is
    a model call of the turn: its span hangs under the turn's, its tokens are in the turn's."""
    receiver = guide
    monkeypatch.setenv("CONDENSE_FOLLOW_UPS", "true")
    fake_llm.script(
        text_reply("Start it with make dev [source:guide#0]."),
        text_reply("Which port does the dev server listen on?", usage=(40, 9)),  # the condensing call
        text_reply(ANSWER),
    )
    c, caller = client(), fresh_caller()
    cid = new_conversation(c, caller)
    ask(c, cid, "How do I start the dev server?", caller)
    receiver.clear()
    assert ask(c, cid, "And which port?", caller)[-1].event == "Completed"
    (root,) = [s for s in receiver.received() if s["name"] == "invoke_agent"]
    spans = [s for s in receiver.received() if s["traceId"] == root["traceId"]]
    by_id = {s["spanId"]: s for s in spans}
    calls = sorted(named(spans, "chat fake-model"), key=lambda s: s["start"])
    assert [c["attributes"].get("rag.model_call.purpose") for c in calls] == ["follow-up", None]
    condensing = calls[0]["attributes"]
    assert (condensing["gen_ai.usage.input_tokens"], condensing["gen_ai.usage.output_tokens"]) == (40, 9)
    assert condensing["gen_ai.response.finish_reasons"] == ["stop"]
    assert calls[0]["parentSpanId"] in by_id and calls[0]["end"] <= calls[1]["start"]
    assert root["attributes"]["gen_ai.usage.input_tokens"] == 40 + 11
    assert root["attributes"]["gen_ai.usage.output_tokens"] == 9 + 7


def test_a_generated_answer_is_one_trace_of_its_search_and_its_model_call(guide, fake_llm):
    """POST /api/v1/query/answer (whole, and streamed) and a failing one: the root `answer` span, the
    retrieval and the model call under it, tokens, and no question or answer text in any attribute."""
    receiver = guide
    fake_llm.script(text_reply(ANSWER, usage=(30, 8)), text_reply(ANSWER, usage=(30, 8)), error_reply(500))
    c, caller = client(), fresh_caller()
    body = {"query": QUESTION}
    assert c.post("/api/v1/query/answer", json=body, headers=caller).status_code == 200
    with c.stream("POST", "/api/v1/query/answer/stream", json=body, headers=caller) as streamed:
        assert "event: done" in streamed.read().decode()
    assert c.post("/api/v1/query/answer", json=body, headers=caller).status_code == 502
    roots = sorted(named(receiver.received(), "answer"), key=lambda s: s["start"])
    assert [r["attributes"]["rag.answer.streaming"] for r in roots] == [False, True, False]
    for root, failed in zip(roots, (False, False, True), strict=True):
        spans = [s for s in receiver.received() if s["traceId"] == root["traceId"]]
        (search,) = named(spans, "retrieval knowledge_base")
        (chat,) = named(spans, "chat fake-model")
        assert search["parentSpanId"] == root["spanId"] and chat["parentSpanId"] == root["spanId"]
        assert search["attributes"]["rag.retrieval.passages"] == 1 and search["end"] <= chat["start"]
        assert root["start"] <= search["start"] and chat["end"] <= root["end"]
        if failed:  # the failed call is marked so, as a turn's is, and the answer with it
            assert root["attributes"]["error.type"] == "ProviderHTTPError"  # its class, never its text
            assert chat["attributes"]["error.type"] == "ProviderHTTPError"
            assert chat["status"] == root["status"] == "STATUS_CODE_ERROR"
            assert "gen_ai.response.finish_reasons" not in chat["attributes"]
            continue
        assert "error.type" not in root["attributes"]
        usage = (
            chat["attributes"]["gen_ai.usage.input_tokens"],
            chat["attributes"]["gen_ai.usage.output_tokens"],
        )
        assert usage == (30, 8) and chat["attributes"]["gen_ai.response.finish_reasons"] == ["stop"]
        assert root["attributes"]["gen_ai.usage.input_tokens"] == 30
        text = repr([s["attributes"] for s in spans])
        assert QUESTION not in text and "listens on port 8000" not in text
