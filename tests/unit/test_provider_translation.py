"""The providers' pure parts: wire mapping, delta accumulation, usage, events, extractive answers,
reasoning sanitizing, retry delays and safe error text."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rag_orchestrator.config import load_settings
from rag_orchestrator.domain.fences import Fence
from rag_orchestrator.domain.messages import FunctionCall, Message, Role, ToolCall
from rag_orchestrator.errors import ConfigError
from rag_orchestrator.loop.compaction import summary_message
from rag_orchestrator.loop.history import app_data
from rag_orchestrator.providers import (
    ContentChunk,
    FinalResponse,
    IterationComplete,
    IterationContext,
    StreamingMode,
    ToolCallsComplete,
    Usage,
    create_strategy,
)
from rag_orchestrator.providers.chat_strategy import IterationAssembler
from rag_orchestrator.providers.extractive import ExtractiveStrategy, parse_results
from rag_orchestrator.providers.openai_compat import RetryPolicy, error_detail, parse_retry_after, retry_delay
from rag_orchestrator.providers.openai_wire import (
    ChunkDelta,
    ToolCallAccumulator,
    ToolCallFragment,
    map_messages,
    map_tools,
    parse_chunk,
    parse_usage,
)
from rag_orchestrator.providers.reasoning import ThinkTagSplitter, sanitize_reasoning
from rag_orchestrator.providers.sentence_picker import NOTHING_FOUND, Passage, compose_answer

RAG_TOOL = {"type": "function", "function": {"name": "rag_search", "description": "Search", "parameters": {}}}


def call(call_id: str, name: str = "rag_search", arguments: str = '{"query": "q"}') -> ToolCall:
    return ToolCall(id=call_id, function=FunctionCall(name=name, arguments=arguments))


def user(text: str) -> Message:
    return Message(role=Role.USER, content=text)


def assistant(text: str = "", calls: list[ToolCall] | None = None, reasoning: str | None = None) -> Message:
    return Message(role=Role.ASSISTANT, content=text, tool_calls=calls, reasoning=reasoning)


def tool(call_id: str, content: str, name: str = "rag_search") -> Message:
    return Message(role=Role.TOOL, content=content, tool_call_id=call_id, tool_name=name)


def ctx(mode: StreamingMode = StreamingMode.PROGRESSIVE, iteration: int = 1, allow_tools: bool = True):
    return IterationContext("conv-1", iteration, 10, mode, allow_tools)


# --- message mapping ---------------------------------------------------------------------------


def test_messages_map_to_the_openai_wire_format():
    wire = map_messages(
        [
            Message(role=Role.SYSTEM, content="Be brief."),
            user("What is the refund policy?"),
            assistant("Let me look.", [call("call_a")], reasoning="need to search"),
            tool("call_a", '{"results": []}'),
            assistant("Nothing found."),
        ]
    )
    assert wire == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is the refund policy?"},
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "rag_search", "arguments": '{"query": "q"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": '{"results": []}'},
        {"role": "assistant", "content": "Nothing found."},
    ]


def test_deepseek_thinking_replays_reasoning_of_tool_call_turns_only():
    history = [
        user("first question"),
        assistant("plain answer", reasoning="thought about the first"),  # no tool call: not needed
        user("second question"),
        assistant("", [call("call_1")], reasoning="need the knowledge base"),
        tool("call_1", "{}"),
        assistant("answer two", reasoning="read the results"),
        user("third question"),
        assistant("", [call("call_2")], reasoning=None),  # stored without a trace
        tool("call_2", "{}"),
    ]
    wire = map_messages(history, replay_reasoning=True)
    replayed = [(m["content"], m.get("reasoning_content")) for m in wire if m["role"] == "assistant"]
    assert replayed == [
        ("plain answer", None),
        ("", "need the knowledge base"),
        ("answer two", "read the results"),
        ("", ""),  # DeepSeek refuses a tool-call message without the field, even empty
    ]
    assert "reasoning_content" not in wire[1]


def test_reasoning_is_never_sent_without_replay():
    wire = map_messages([user("q"), assistant("", [call("c")], reasoning="secret thoughts"), tool("c", "{}")])
    assert all("reasoning_content" not in m for m in wire)
    assert "secret thoughts" not in json.dumps(wire)


def test_bare_function_definitions_are_wrapped():
    bare = {"name": "get_order", "description": "d", "parameters": {"type": "object"}}
    assert map_tools([bare, RAG_TOOL]) == [{"type": "function", "function": bare}, RAG_TOOL]


# --- deltas, tool-call accumulation, usage ----------------------------------------------------


def test_qwen_style_fragments_join_by_index():
    acc = ToolCallAccumulator()
    acc.add(ToolCallFragment(0, "call_x", "rag_search", '{"que'))
    acc.add(ToolCallFragment(1, "call_y", "get_order", ""))
    acc.add(ToolCallFragment(0, None, None, 'ry": "refu'))
    acc.add(ToolCallFragment(1, None, None, '{"orderId": "7"}'))
    acc.add(ToolCallFragment(0, None, None, 'nds"}'))
    calls = acc.complete()
    assert [(c.id, c.function.name, c.parsed_arguments()) for c in calls] == [
        ("call_x", "rag_search", {"query": "refunds"}),
        ("call_y", "get_order", {"orderId": "7"}),
    ]


def test_malformed_arguments_are_kept_as_text_and_missing_ids_are_made():
    acc = ToolCallAccumulator()
    acc.add(ToolCallFragment(0, None, "rag_search", '{"query": "unterminated'))
    acc.add(ToolCallFragment(1, "call_2", "other", ""))
    first, second = acc.complete()
    assert first.function.arguments == '{"query": "unterminated'
    assert first.id.startswith("call_")
    assert second.function.arguments == "{}"
    with pytest.raises(ValueError):
        first.parsed_arguments()


def test_fragments_without_index_follow_their_id():
    acc = ToolCallAccumulator()
    for fragment in (
        ToolCallFragment(None, "a", "one", '{"x":'),
        ToolCallFragment(None, None, None, " 1}"),
        ToolCallFragment(None, "b", "two", "{}"),
    ):
        acc.add(fragment)
    assert [(c.id, c.function.arguments) for c in acc.complete()] == [("a", '{"x": 1}'), ("b", "{}")]


def test_chunks_parse_content_reasoning_tools_and_finish():
    delta = parse_chunk(
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "content": "Hi",
                        "reasoning_content": "hmm",
                        "tool_calls": [
                            {"index": 0, "id": "c1", "function": {"name": "f", "arguments": "{}"}}
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ]
        }
    )
    assert delta == ChunkDelta("Hi", "hmm", (ToolCallFragment(0, "c1", "f", "{}"),), "tool_calls", None)
    assert (
        parse_chunk({"choices": [{"delta": {"reasoning": "vllm style", "content": None}}]}).reasoning
        == "vllm style"
    )
    assert not parse_chunk({"choices": [{"delta": {"role": "assistant", "content": ""}}]}).has_output


def test_the_usage_chunk_has_no_choices():
    delta = parse_chunk(
        {"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}}
    )
    assert delta.usage == Usage(12, 5, 17)
    assert not delta.has_output
    assert parse_usage({"prompt_tokens": 3, "completion_tokens": 4}) == Usage(3, 4, 7)
    assert parse_usage(None) is None
    assert parse_usage({"prompt_tokens": "x"}) is None


# --- one iteration's events -------------------------------------------------------------------


def feed_all(mode: StreamingMode, deltas: list[ChunkDelta], **options) -> list:
    assembler = IterationAssembler(mode, **options)
    events = [event for delta in deltas for event in assembler.feed(delta)]
    return events + assembler.finish(prompt_chars=400)


ANSWER = [
    ChunkDelta(reasoning="think"),
    ChunkDelta(content="Hel"),
    ChunkDelta(content="lo", finish_reason="stop"),
    ChunkDelta(usage=Usage(10, 2, 12)),
]
TOOLS = [
    ChunkDelta(tool_calls=(ToolCallFragment(0, "c1", "rag_search", '{"query"'),)),
    ChunkDelta(tool_calls=(ToolCallFragment(0, None, None, ': "x"}'),), finish_reason="tool_calls"),
]


def test_progressive_answer_streams_chunks_then_final():
    events = feed_all(StreamingMode.PROGRESSIVE, ANSWER)
    assert events == [
        ContentChunk("Hel"),
        ContentChunk("lo"),
        FinalResponse("Hello", "think"),
        IterationComplete(Usage(10, 2, 12), "stop"),  # the provider's finish reason, for the trace
    ]


def test_final_only_has_no_chunks_and_the_same_result():
    progressive = feed_all(StreamingMode.PROGRESSIVE, ANSWER)
    final_only = feed_all(StreamingMode.FINAL_ONLY, ANSWER)
    assert final_only == [e for e in progressive if not isinstance(e, ContentChunk)]


def test_tool_calls_end_the_iteration_whole_with_estimated_usage():
    events = feed_all(StreamingMode.PROGRESSIVE, TOOLS)
    complete, done = events
    assert isinstance(complete, ToolCallsComplete) and complete.reasoning is None
    [tool_call] = complete.tool_calls
    assert (tool_call.id, tool_call.function.name, tool_call.function.arguments) == (
        "c1",
        "rag_search",
        '{"query": "x"}',
    )
    assert done.usage.estimated
    assert done.usage.prompt_tokens == 100  # 400 characters at ~4 per token
    assert [type(e) for e in feed_all(StreamingMode.FINAL_ONLY, TOOLS)] == [
        ToolCallsComplete,
        IterationComplete,
    ]


def test_inline_think_blocks_become_reasoning():
    deltas = [ChunkDelta(content=piece) for piece in ("<thi", "nk>plan it</th", "ink>\n\nAns", "wer")]
    events = feed_all(StreamingMode.PROGRESSIVE, deltas, split_think_tags=True)
    assert "".join(e.content for e in events if isinstance(e, ContentChunk)) == "Answer"
    assert events[-2] == FinalResponse("Answer", "plan it")


def test_think_splitter_leaves_ordinary_content_alone():
    splitter = ThinkTagSplitter()
    assert splitter.feed("  ") == ("", "")
    assert splitter.feed("<b>bold</b>") == ("  <b>bold</b>", "")
    assert splitter.flush() == ("", "")
    unclosed = ThinkTagSplitter()
    unclosed.feed("<think>never closed")
    assert unclosed.flush() == ("", "")  # everything was already released as reasoning


# --- the extractive strategy ------------------------------------------------------------------

KB = json.dumps(
    {
        "results": [
            {
                "documentId": "refund-policy",
                "chunkIndex": 0,
                "title": "Refunds",
                "source": "kb",
                "score": 0.9,
                "text": "Refunds are issued within 14 days of the return. Shipping costs are not refunded.",
            },
            {
                "documentId": "shipping",
                "chunkIndex": 2,
                "title": "Shipping",
                "source": "kb",
                "score": 0.7,
                "text": "Orders ship in two days. Express shipping costs extra.",
            },
        ]
    }
)


async def collect(strategy, messages, tools, context) -> list:
    return [event async for event in strategy.run_iteration(messages, tools, context)]


async def test_extractive_searches_first_with_a_deterministic_call():
    events = await collect(ExtractiveStrategy(), [user("How long do refunds take?")], [RAG_TOOL], ctx())
    complete, done = events
    [tool_call] = complete.tool_calls
    assert tool_call.id == "call_rag_1"
    assert json.loads(tool_call.function.arguments) == {
        "query": "How long do refunds take?",
        "max_results": 5,
    }
    assert done.usage.estimated


async def test_extractive_quotes_matching_sentences_with_citations():
    messages = [
        user("How long do refunds take?"),
        assistant("", [call("call_rag_1")]),
        tool("call_rag_1", KB),
    ]
    events = await collect(ExtractiveStrategy(), messages, [RAG_TOOL], ctx(iteration=2))
    final = next(e for e in events if isinstance(e, FinalResponse))
    assert "Refunds are issued within 14 days of the return. [source:refund-policy#0]" in final.content
    assert "Orders ship in two days" not in final.content
    assert "".join(e.content for e in events if isinstance(e, ContentChunk)) == final.content
    assert len([e for e in events if isinstance(e, ContentChunk)]) > 5  # word by word
    assert events[-1] == IterationComplete(events[-1].usage)


async def test_a_follow_up_is_searched_with_the_question_before_it_not_the_apps_data_message():
    data = app_data(Fence(), None, None, KB)
    assert data is not None
    messages = [
        user("How long do refunds take?"),
        assistant("Refunds are issued within 14 days of the return. [source:refund-policy#0]"),
        data,  # the app's data message comes just before the question it was sent with
        user("And for express orders?"),
    ]
    [complete, _] = await collect(ExtractiveStrategy(), messages, [RAG_TOOL], ctx())
    query = json.loads(complete.tool_calls[0].function.arguments)["query"]
    assert query.startswith("And for express orders?") and "refunds" in query.lower()
    assert "app" not in query.lower()


async def test_a_follow_up_after_a_summary_alone_is_not_read_with_the_summary():
    fence = Fence()
    messages = [
        summary_message("The user asked about refunds; they take 14 days.", fence),
        user("And a sofa?"),
    ]
    [complete, _] = await collect(ExtractiveStrategy(), messages, [RAG_TOOL], ctx())
    assert json.loads(complete.tool_calls[0].function.arguments)["query"] == "And a sofa?"


async def test_extractive_says_plainly_when_nothing_is_found():
    messages = [user("What about warranties?"), assistant("", [call("c")]), tool("c", '{"results": []}')]
    events = await collect(ExtractiveStrategy(), messages, [RAG_TOOL], ctx(StreamingMode.FINAL_ONLY, 2))
    assert [type(e) for e in events] == [FinalResponse, IterationComplete]
    assert events[0].content == NOTHING_FOUND


async def test_extractive_reads_the_initial_knowledge_message_and_needs_no_tools():
    knowledge = Message(
        role=Role.SYSTEM, content="Knowledge base results for the user's latest message:\n" + KB
    )
    messages = [knowledge, user("Does express shipping cost extra?")]
    events = await collect(ExtractiveStrategy(), messages, [], ctx(allow_tools=False))
    final = next(e for e in events if isinstance(e, FinalResponse))
    assert "Express shipping costs extra. [source:shipping#2]" in final.content


async def test_extractive_asks_again_on_a_new_question():
    messages = [
        user("refunds?"),
        assistant("", [call("call_rag_1")]),
        tool("call_rag_1", KB),
        assistant("…"),
        user("shipping?"),
    ]
    events = await collect(ExtractiveStrategy(), messages, [RAG_TOOL], ctx())
    assert isinstance(events[0], ToolCallsComplete) and events[0].tool_calls[0].id == "call_rag_1"


def test_results_parser_tolerates_other_content():
    assert parse_results("the tool failed") == []
    assert parse_results('{"error": "timeout", "success": false}') == []
    assert parse_results('{"results": [{"documentId": "d"}, {"text": "t", "chunkIndex": "x"}]}') == [
        Passage("unknown", 0, "t")
    ]


def test_answer_prefers_more_shared_words_and_dedupes():
    passages = [Passage("a", 0, "Cats sleep a lot. Dogs bark."), Passage("a", 0, "Cats sleep a lot.")]
    answer = compose_answer("Do cats sleep?", passages)
    assert answer.count("Cats sleep a lot.") == 1
    assert "Dogs" not in answer
    assert compose_answer("unrelated words", passages) == NOTHING_FOUND


def test_overlapping_chunks_do_not_quote_the_same_sentence_twice():
    passages = [
        Passage("readme", 0, "Run make test to run the whole suite ```"),
        Passage("readme", 1, "Run make test to run the whole suite. Make dev starts the stack."),
    ]
    answer = compose_answer("How do I run the test suite?", passages)
    assert answer.count("whole suite") == 1


# --- reasoning sanitizing ---------------------------------------------------------------------


def test_sanitize_removes_ids_tool_names_and_arguments():
    trace = (
        "Conversation 3f2b1c9e-8a7d-4e6f-9b0a-1c2d3e4f5a6b asked about refunds. "
        'I will call rag_search({"query": "refund policy", "max_results": 5}) and then get_order_status '
        'with {"orderId": "A-778"}. Previous call_abc123XYZ returned doc 9f86d081884c7d659a2feaa0c55ad015. '
        "Token eyJhbGciOiJIUzI1NiJ9abc123def456ghi789 seen. Session sess-42 is ours."
    )
    clean = sanitize_reasoning(trace, tool_names=["rag_search", "get_order_status"], extra_ids=["sess-42"])
    for leaked in (
        "3f2b1c9e",
        "rag_search",
        "get_order_status",
        "refund policy",
        "A-778",
        "call_abc123XYZ",
        "9f86d081884c7d659a2feaa0c55ad015",
        "eyJhbGciOiJIUzI1NiJ9abc123def456ghi789",
        "sess-42",
    ):
        assert leaked not in clean
    assert clean.startswith("Conversation [id] asked about refunds. I will call [tool] and then [tool]")


def test_sanitize_keeps_ordinary_prose():
    text = "The user wants to know how long refunds take; the policy says 14 days."
    assert sanitize_reasoning(text) == text


# --- retries and safe errors ------------------------------------------------------------------


def test_retry_delay_honours_retry_after_with_a_cap_else_full_jitter():
    policy = RetryPolicy(max_retries=3, base_seconds=0.5, cap_seconds=4.0, retry_after_cap_seconds=10.0)
    assert retry_delay(0, 0.1, policy) == 0.1
    assert retry_delay(0, 3600, policy) == 10.0
    assert retry_delay(2, None, policy, rand=lambda: 1.0) == 2.0
    assert retry_delay(9, None, policy, rand=lambda: 1.0) == 4.0
    assert retry_delay(1, None, policy, rand=lambda: 0.0) == 0.0
    assert parse_retry_after("0.1") == 0.1
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
    assert parse_retry_after("soon") is None


def test_error_detail_is_short_and_never_holds_the_key():
    key = "sk-live-1234567890abcdef"
    body = {"error": {"message": f"Incorrect API key provided: {key}", "type": "authentication_error"}}
    detail = error_detail(body, key)
    assert key not in detail
    assert detail.startswith("authentication_error: Incorrect API key provided")
    assert key not in error_detail({"error": {"message": "bad sk-other-0987654321zz"}}, None)
    assert len(error_detail({"error": {"message": "x" * 5000}})) <= 300


# --- the factory ------------------------------------------------------------------------------


def test_the_factory_names_a_missing_key():
    with pytest.raises(ConfigError, match="DEEPSEEK_API_KEY"):
        create_strategy(load_settings(model_strategy="deepseek_single"))


def test_payloads_carry_each_dialects_switches():
    messages = [user("hi")]
    deepseek = create_strategy(
        load_settings(model_strategy="deepseek_single", deepseek_api_key="k", deepseek_thinking=True)
    )
    payload = deepseek.build_payload(messages, [RAG_TOOL], ctx())
    assert payload["thinking"] == {"type": "enabled"}
    assert payload["model"] == "deepseek-flash"
    assert payload["stream"] is True and payload["stream_options"] == {"include_usage": True}
    off = create_strategy(load_settings(model_strategy="deepseek_single", deepseek_api_key="k"))
    assert off.build_payload(messages, [], ctx())["thinking"] == {"type": "disabled"}
    qwen = create_strategy(load_settings(model_strategy="qwen_single_thinking", qwen_api_key="k"))
    assert qwen.build_payload(messages, [RAG_TOOL], ctx())["enable_thinking"] is True
    instruct = create_strategy(load_settings(model_strategy="qwen_single_instruct", qwen_api_key="k"))
    assert instruct.build_payload(messages, [], ctx())["enable_thinking"] is False
    generic = create_strategy(
        load_settings(
            model_strategy="openai_compatible",
            openai_compatible_base_url="http://127.0.0.1:9/v1",
            openai_compatible_model="llama3",
        )
    )
    plain = generic.build_payload(messages, [RAG_TOOL], ctx(allow_tools=False))
    assert "tools" not in plain
    assert set(plain) == {"model", "messages", "stream", "stream_options", "max_tokens", "temperature"}


@pytest.mark.parametrize(
    ("settings", "sent"),
    [
        ({"model_strategy": "openai_compatible"}, 0.7),  # the default
        ({"model_strategy": "openai_compatible", "model_temperature": 0}, 0.0),
        ({"model_strategy": "deepseek_single", "model_temperature": 1.3}, 1.3),
        ({"model_strategy": "deepseek_single", "deepseek_thinking": True}, None),  # ignored there
        ({"model_strategy": "deepseek_single", "deepseek_model": "deepseek-reasoner"}, None),
        ({"model_strategy": "qwen_single_instruct", "model_temperature": 0.2}, 0.2),
        ({"model_strategy": "qwen_single_thinking", "model_temperature": 0.2}, None),  # DashScope's own
    ],
)
def test_model_temperature_goes_with_every_request_but_thinking_ones(settings, sent):
    strategy = create_strategy(
        load_settings(
            **settings,
            deepseek_api_key="k",
            qwen_api_key="k",
            openai_compatible_base_url="http://127.0.0.1:9/v1",
            openai_compatible_model="llama3",
        )
    )
    assert strategy.build_payload([user("hi")], [RAG_TOOL], ctx()).get("temperature") == sent
    # a call without tools (a title, an answer) too
    assert strategy.build_payload([user("hi")], [], ctx(allow_tools=False)).get("temperature") == sent


@pytest.mark.parametrize("value", ["-0.1", "2.5", "warm"])
def test_a_temperature_out_of_range_is_named(monkeypatch, value):
    monkeypatch.setenv("MODEL_TEMPERATURE", value)
    with pytest.raises(ConfigError, match="MODEL_TEMPERATURE"):
        load_settings()


def test_the_extractive_strategy_imports_no_http_client():
    code = (
        "import sys; from rag_orchestrator.config import load_settings; "
        "from rag_orchestrator.providers import create_strategy; "
        "s = create_strategy(load_settings(model_strategy='extractive', conversation_storage='memory')); "
        "assert s.name == 'extractive'; "
        "assert 'rag_orchestrator.providers.openai_compat' not in sys.modules; "
        "assert 'httpx_sse' not in sys.modules"
    )
    subprocess.run(
        [sys.executable, "-c", code], check=True, env={"PYTHONPATH": "layers/core", "AUTH_MODE": "dev"}
    )
