"""Each OpenAI-compatible strategy against the fake LLM server: real HTTP and SSE on loopback."""

from __future__ import annotations

import asyncio
import logging
from contextlib import aclosing

import pytest

from rag_orchestrator.config import load_settings
from rag_orchestrator.domain.messages import Message, Role
from rag_orchestrator.errors import ProviderHTTPError, ProviderStreamError, ProviderTimeout
from rag_orchestrator.observability import TRACE
from rag_orchestrator.providers import (
    ContentChunk,
    FinalResponse,
    IterationContext,
    StreamingMode,
    ToolCallsComplete,
    create_strategy,
)
from rag_orchestrator.providers.openai_compat import RetryPolicy
from tests.fakes.fake_llm import (
    Comment,
    Drop,
    HTTPError,
    Pause,
    Reset,
    Stream,
    chunk,
    content_chunk,
    error_chunk,
    error_reply,
    fake_llm,  # noqa: F401  (fixture)
    reasoning_chunk,
    reasoning_tool_call_reply,
    text_reply,
    tool_call_reply,
    tool_calls_reply,
)

pytestmark = pytest.mark.integration

FAST_RETRIES = RetryPolicy(max_retries=3, base_seconds=0.01, cap_seconds=0.02, retry_after_cap_seconds=1.0)
RAG_TOOL = {
    "type": "function",
    "function": {
        "name": "rag_search",
        "description": "Search the knowledge base",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    },
}
QUESTION = [
    Message(role=Role.SYSTEM, content="Be helpful."),
    Message(role=Role.USER, content="How long do refunds take?"),
]


@pytest.fixture
async def strategy_for(fake_llm):  # noqa: F811
    made = []

    def make(name: str, **overrides):
        overrides.setdefault("model_idle_timeout_seconds", 5.0)
        strategy = create_strategy(
            load_settings(**fake_llm.settings_for(name, **overrides)), retry=FAST_RETRIES
        )
        made.append(strategy)
        return strategy

    yield make
    for strategy in made:
        await strategy.aclose()


def ctx(mode: StreamingMode = StreamingMode.PROGRESSIVE, iteration: int = 1) -> IterationContext:
    return IterationContext("conv-1", iteration, 10, mode)


async def run(strategy, messages=QUESTION, tools=(RAG_TOOL,), mode=StreamingMode.PROGRESSIVE, iteration=1):
    return [
        event async for event in strategy.run_iteration(list(messages), list(tools), ctx(mode, iteration))
    ]


def text_of(events, kind=ContentChunk) -> str:
    return "".join(e.content for e in events if isinstance(e, kind))


# --- streaming --------------------------------------------------------------------------------


async def test_a_streamed_answer_with_keepalives_usage_and_no_done(fake_llm, strategy_for):  # noqa: F811
    fake_llm.script(
        text_reply("Refunds take fourteen days.", chunks=4, keepalive=True, done=False, usage=(30, 6))
    )
    events = await run(strategy_for("openai_compatible"))
    assert text_of(events) == "Refunds take fourteen days."
    assert len([e for e in events if isinstance(e, ContentChunk)]) == 4
    assert events[-2] == FinalResponse("Refunds take fourteen days.", None)
    assert events[-1].usage.total_tokens == 36 and not events[-1].usage.estimated
    body = fake_llm.requests[0]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["model"] == "fake-model" and body["tools"] == [RAG_TOOL]
    assert body["temperature"] == 0.7  # MODEL_TEMPERATURE's default
    assert body["messages"][-1] == {"role": "user", "content": "How long do refunds take?"}
    assert fake_llm.headers[0]["authorization"] == "Bearer test-key"


async def test_usage_is_estimated_without_a_usage_chunk(fake_llm, strategy_for):  # noqa: F811
    fake_llm.script(text_reply("Fourteen days.", usage=None))
    usage = (await run(strategy_for("openai_compatible")))[-1].usage
    assert usage.estimated and usage.completion_tokens == 4 and usage.prompt_tokens > 0


async def test_qwen_style_tool_call_fragments(fake_llm, strategy_for):  # noqa: F811
    fake_llm.script(
        tool_calls_reply(
            [
                ("rag_search", {"query": "refund time"}, "call_q1"),
                ("get_order", {"orderId": "A1"}, "call_q2"),
            ],
            fragments=4,
        )
    )
    events = await run(strategy_for("qwen_single_instruct"))
    complete = events[-2]
    assert isinstance(complete, ToolCallsComplete) and (complete.assistant_content, complete.reasoning) == (
        "",
        None,
    )
    assert [(c.id, c.function.name, c.parsed_arguments()) for c in complete.tool_calls] == [
        ("call_q1", "rag_search", {"query": "refund time"}),
        ("call_q2", "get_order", {"orderId": "A1"}),
    ]
    assert fake_llm.requests[0]["enable_thinking"] is False
    assert fake_llm.requests[0]["model"] == "qwen-plus"


async def test_malformed_tool_arguments_do_not_fail_the_iteration(fake_llm, strategy_for):  # noqa: F811
    fake_llm.script(tool_call_reply("rag_search", '{"query": "refu', call_id="call_bad"))
    events = await run(strategy_for("qwen_single_instruct"))
    assert events[-2].tool_calls[0].function.arguments == '{"query": "refu'


async def test_qwen_thinking_captures_reasoning_and_keeps_it_out_of_content(fake_llm, strategy_for, caplog):  # noqa: F811
    caplog.set_level(TRACE, logger="rag-orchestrator")
    trace = 'The user conv-1 asks about refunds; rag_search {"query": "refunds"} found 14 days.'
    fake_llm.script(text_reply("Refunds take 14 days.", reasoning=trace))
    events = await run(strategy_for("qwen_single_thinking"))
    assert text_of(events) == "Refunds take 14 days."
    assert events[-2] == FinalResponse("Refunds take 14 days.", trace)
    assert fake_llm.requests[0]["enable_thinking"] is True
    audits = [r.getMessage() for r in caplog.records if "[thinking][audit]" in r.getMessage()]
    assert len(audits) == 1
    assert "refunds" in audits[0] and "rag_search" not in audits[0] and "conv-1" not in audits[0]


async def test_final_only_equals_progressive_aggregated(fake_llm, strategy_for):  # noqa: F811
    strategy = strategy_for("qwen_single_thinking")
    replies = [
        text_reply("Refunds take 14 days.", chunks=5, reasoning="check policy", keepalive=True),
        reasoning_tool_call_reply("search first", "rag_search", {"query": "refunds"}),
    ]
    for reply in replies:
        fake_llm.script(reply, reply)
        progressive = await run(strategy, mode=StreamingMode.PROGRESSIVE)
        final_only = await run(strategy, mode=StreamingMode.FINAL_ONLY)
        assert final_only == [e for e in progressive if not isinstance(e, ContentChunk)]
        assert len(final_only) == 2


# --- DeepSeek thinking: reasoning replay ------------------------------------------------------


async def test_deepseek_refuses_a_history_without_reasoning(fake_llm, strategy_for):  # noqa: F811
    fake_llm.deepseek_thinking = True
    history = await _tool_turn_history(fake_llm, strategy_for("deepseek_single", deepseek_thinking=True))
    fake_llm.script(text_reply("never sent"))
    with pytest.raises(ProviderHTTPError) as raised:
        await run(strategy_for("openai_compatible"), history)  # the plain dialect passes nothing back
    assert raised.value.status == 400 and not raised.value.retryable
    assert raised.value.message == "openai_compatible answered HTTP 400"  # the server's words are logged
    assert len(fake_llm.requests) == 2 and fake_llm.pending == 1  # refused, and not retried


async def test_deepseek_thinking_replays_reasoning_and_succeeds(fake_llm, strategy_for):  # noqa: F811
    fake_llm.deepseek_thinking = True
    strategy = strategy_for("deepseek_single", deepseek_thinking=True)
    history = await _tool_turn_history(fake_llm, strategy)
    fake_llm.script(text_reply("Refunds take 14 days.", reasoning="the results say 14 days"))
    events = await run(strategy, history, iteration=2)
    assert events[-2] == FinalResponse("Refunds take 14 days.", "the results say 14 days")
    sent = fake_llm.requests[-1]
    assert sent["thinking"] == {"type": "enabled"} and sent["model"] == "deepseek-flash"
    assistant = next(m for m in sent["messages"] if m.get("tool_calls"))
    assert assistant["reasoning_content"] == "I need the refund policy"

    history += [
        Message(role=Role.ASSISTANT, content="Refunds take 14 days.", reasoning="the results say 14 days")
    ]
    history += [Message(role=Role.USER, content="And shipping?")]
    fake_llm.script(text_reply("Two days."))
    assert (await run(strategy, history))[-2].content == "Two days."
    later = fake_llm.requests[-1]["messages"]
    assert [m.get("reasoning_content") for m in later if m["role"] == "assistant"] == [
        "I need the refund policy",
        "the results say 14 days",
    ]


async def _tool_turn_history(fake_llm, strategy) -> list[Message]:  # noqa: F811
    """A first iteration that calls rag_search with reasoning, and the history the loop would build."""
    fake_llm.script(reasoning_tool_call_reply("I need the refund policy", "rag_search", {"query": "refunds"}))
    complete = next(e for e in await run(strategy) if isinstance(e, ToolCallsComplete))
    assert complete.reasoning == "I need the refund policy"
    call = complete.tool_calls[0]
    return [
        *QUESTION,
        Message(
            role=Role.ASSISTANT,
            content="",
            tool_calls=list(complete.tool_calls),
            reasoning=complete.reasoning,
        ),
        Message(role=Role.TOOL, content='{"results": []}', tool_call_id=call.id, tool_name="rag_search"),
    ]


# --- retries ----------------------------------------------------------------------------------


async def test_429_is_retried_after_retry_after(fake_llm, strategy_for, caplog):  # noqa: F811
    fake_llm.script(error_reply(429, "Rate limit reached", retry_after=0.1), text_reply("ok"))
    events = await run(strategy_for("qwen_single_instruct"))
    assert events[-2].content == "ok"
    assert len(fake_llm.requests) == 2
    retries = [r for r in caplog.records if r.getMessage().startswith("model provider request failed")]
    assert [r.delay_seconds for r in retries] == [0.1]
    assert "HTTP 429" in retries[0].reason


async def test_500_and_503_are_retried(fake_llm, strategy_for):  # noqa: F811
    fake_llm.script(error_reply(500), error_reply(503), text_reply("ok"))
    assert (await run(strategy_for("deepseek_single")))[-2].content == "ok"
    assert len(fake_llm.requests) == 3


async def test_retries_stop_at_the_limit(fake_llm, strategy_for):  # noqa: F811
    fake_llm.script(*[error_reply(502)] * 5)
    with pytest.raises(ProviderHTTPError) as raised:
        await run(strategy_for("deepseek_single", model_max_retries=2))
    assert raised.value.status == 502 and len(fake_llm.requests) == 4  # FAST_RETRIES allows 3


@pytest.mark.parametrize("status", [400, 401, 402, 403, 404, 422])
async def test_client_errors_are_not_retried(fake_llm, strategy_for, status):  # noqa: F811
    fake_llm.script(error_reply(status, "no"), text_reply("never"))
    with pytest.raises(ProviderHTTPError) as raised:
        await run(strategy_for("qwen_single_instruct"))
    assert raised.value.status == status
    assert raised.value.message.startswith(f"qwen answered HTTP {status}")
    assert len(fake_llm.requests) == 1


async def test_a_connection_dropped_before_any_content_is_retried(fake_llm, strategy_for):  # noqa: F811
    fake_llm.script(
        Stream([chunk({"role": "assistant", "content": ""}), Comment(), Drop()]), text_reply("ok")
    )
    assert (await run(strategy_for("openai_compatible")))[-2].content == "ok"
    assert len(fake_llm.requests) == 2


@pytest.mark.parametrize(
    "reset",
    [
        Reset(),  # before the answer's head
        Stream([Reset()]),  # after the head, before any event
        Stream([chunk({"role": "assistant", "content": ""}), Reset()]),  # after an event with no output
    ],
)
async def test_a_connection_reset_before_any_output_is_retried(fake_llm, strategy_for, reset):  # noqa: F811
    fake_llm.script(reset, text_reply("ok"))
    assert (await run(strategy_for("openai_compatible")))[-2].content == "ok"
    assert len(fake_llm.requests) == 2


@pytest.mark.parametrize(
    ("partial", "kinds"),
    [(content_chunk("Refunds ta"), [ContentChunk]), (reasoning_chunk("Let me"), [])],
)
async def test_a_connection_dropped_after_output_is_not_retried(fake_llm, strategy_for, partial, kinds):  # noqa: F811
    fake_llm.script(Stream([partial, Drop()]), text_reply("never"))
    received = []
    with pytest.raises(ProviderStreamError, match="connection failed"):
        async for event in strategy_for("qwen_single_thinking").run_iteration(list(QUESTION), [], ctx()):
            received.append(event)
    assert [type(e) for e in received] == kinds
    assert len(fake_llm.requests) == 1 and fake_llm.pending == 1


async def test_closing_an_iteration_early_closes_the_provider_stream(fake_llm, strategy_for):  # noqa: F811
    beats = [part for _ in range(200) for part in (Comment(), Pause(0.05))]
    fake_llm.script(Stream([content_chunk("Hel"), *beats, content_chunk("lo")]))
    async with aclosing(strategy_for("openai_compatible").run_iteration(list(QUESTION), [], ctx())) as events:
        assert await anext(events) == ContentChunk("Hel")
    for _ in range(200):  # the server notices on its next keep-alive
        if fake_llm.connections_closed:
            break
        await asyncio.sleep(0.05)
    assert fake_llm.connections_closed == 1


async def test_one_connection_carries_model_call_after_call(fake_llm, strategy_for):  # noqa: F811
    fake_llm.script(
        tool_call_reply("rag_search", {"query": "refunds"}), text_reply("ok"), text_reply("again")
    )
    strategy = strategy_for("openai_compatible")
    for _ in range(3):
        await run(strategy)
    assert len(fake_llm.requests) == 3 and fake_llm.connections_closed == 0  # no handshake per call
    await strategy.aclose()
    for _ in range(40):
        if fake_llm.connections_closed:
            break
        await asyncio.sleep(0.05)
    assert fake_llm.connections_closed == 1


async def test_the_request_asks_for_an_event_stream(fake_llm, strategy_for):  # noqa: F811
    fake_llm.script(text_reply("ok"))
    await run(strategy_for("openai_compatible"))
    assert fake_llm.headers[0]["accept"] == "text/event-stream"
    assert fake_llm.headers[0]["cache-control"] == "no-store"


async def test_an_answer_that_is_not_an_event_stream_is_refused_and_not_retried(fake_llm, strategy_for):  # noqa: F811
    fake_llm.script(HTTPError(200, {"choices": [{"message": {"content": "whole"}}]}), text_reply("never"))
    with pytest.raises(ProviderStreamError, match=r"^openai_compatible: the answer is not an event stream$"):
        await run(strategy_for("openai_compatible"))
    assert len(fake_llm.requests) == 1


# --- timeouts and in-band errors --------------------------------------------------------------


async def test_idle_timeout_between_chunks(fake_llm, strategy_for):  # noqa: F811
    fake_llm.script(Stream([content_chunk("Refunds"), Pause(2.0), content_chunk(" take")]))
    with pytest.raises(ProviderTimeout, match=r"no data for 0\.3 seconds"):
        await run(strategy_for("openai_compatible", model_idle_timeout_seconds=0.3))
    assert len(fake_llm.requests) == 1


async def test_total_timeout_even_with_keepalives(fake_llm, strategy_for):  # noqa: F811
    beats = [part for _ in range(30) for part in (Comment(), Pause(0.1))]
    fake_llm.script(Stream(beats))
    with pytest.raises(ProviderTimeout, match=r"within 0\.5 seconds"):
        await run(strategy_for("openai_compatible", model_timeout_seconds=0.5))


async def test_an_in_band_error_is_ours_and_the_providers_words_are_logged(fake_llm, strategy_for, caplog):  # noqa: F811
    fake_llm.script(Stream([content_chunk("Ref"), error_chunk("Model overloaded, try later", "overloaded")]))
    with pytest.raises(ProviderStreamError, match=r"^deepseek: the answer stream reported an error$"):
        await run(strategy_for("deepseek_single"))
    assert len(fake_llm.requests) == 1
    [logged] = [r for r in caplog.records if r.getMessage() == "model provider stream reported an error"]
    assert logged.detail == "overloaded: Model overloaded, try later"


# --- the key never leaks ----------------------------------------------------------------------


async def test_the_api_key_never_appears_in_logs_or_errors(fake_llm, strategy_for, caplog, capsys):  # noqa: F811
    key = "sk-LEAKCHECK-0123456789abcdef"
    caplog.set_level(logging.DEBUG)
    fake_llm.script(
        error_reply(429, f"Slow down, {key}", retry_after=0.01),
        error_reply(401, f"Incorrect API key provided: {key}", kind="authentication_error"),
    )
    strategy = strategy_for("deepseek_single", api_key=key)
    with pytest.raises(ProviderHTTPError) as raised:
        await run(strategy)
    assert fake_llm.headers[0]["authorization"] == f"Bearer {key}"  # it was sent, and only there
    assert raised.value.status == 401
    for text in (str(raised.value), raised.value.message, repr(raised.value), repr(strategy), caplog.text):
        assert key not in text
    assert key not in capsys.readouterr().out
    assert raised.value.message == "deepseek answered HTTP 401"
    details = [r.detail for r in caplog.records if r.getMessage() == "model provider refused a request"]
    assert details[-1] == "authentication_error: Incorrect API key provided: [redacted]"  # for the log
