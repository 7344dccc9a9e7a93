"""The one rule for client strings: lone surrogates and control characters (but tab and line ends) refused."""

import pytest
from pydantic import ValidationError

from rag_orchestrator.domain.conversations import ChatRequest, CreateConversationRequest
from rag_orchestrator.domain.messages import FunctionCall, ToolCall
from rag_orchestrator.domain.text import InvalidText, check_strings, check_text, scrub
from rag_orchestrator.tools.base import ToolContext
from rag_orchestrator.tools.registry import ToolRegistry
from tests.fakes.scripted import MemorySearchTool


@pytest.mark.parametrize("text", ["plain", "two\nlines\r\nand\ttabs", "émoji 🎉 and 中文", ""])
def test_ordinary_text_passes_unchanged(text):
    assert check_text(text) is text


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("a\ud800b", "lone surrogate (U+D800)"),
        ("\udfff", "lone surrogate (U+DFFF)"),
        ("nul\x00", "control character (U+0000)"),
        ("bell\x07", "control character (U+0007)"),
        ("escape\x1b[31m", "control character (U+001B)"),
        ("del\x7f", "control character (U+007F)"),
        ("c1\x85", "control character (U+0085)"),
    ],
)
def test_surrogates_and_control_characters_are_refused_by_name(text, says):
    with pytest.raises(InvalidText) as raised:
        check_text(text, "message")
    assert str(raised.value) == f"message: contains a {says}"


def test_nested_values_and_keys_are_checked_with_their_path():
    with pytest.raises(InvalidText, match=r"^context\.items\[1\]\.name: contains a lone surrogate"):
        check_strings({"context": {"items": [{"name": "ok"}, {"name": "\ud800"}]}})
    with pytest.raises(InvalidText, match=r"^context: a key contains a control character"):
        check_strings({"context": {"bad\x01key": 1}})
    fine = {"a": [1, 2.5, None, True, {"b": "c\n"}]}
    assert check_strings(fine) is fine


def test_absurdly_deep_documents_are_refused_rather_than_walked():
    deep: object = "x"
    for _ in range(40):
        deep = [deep]
    with pytest.raises(InvalidText, match="nested deeper"):
        check_strings({"context": deep})


def test_scrub_replaces_surrogates_for_display_only():
    assert scrub('{"q": "\ud800"}') == '{"q": "\ufffd"}'


@pytest.mark.parametrize(
    "body",
    [
        {"message": "hi", "context": {"screen": {"note": "\ud800"}}},
        {"message": "hi", "metadata": {"k": "v\x00"}},
        {"message": "hi", "clientMessageId": "m\x1b1"},
        {"message": "hi\ud83d"},
        {"message": "hi", "contextType": "orders\x07"},
    ],
)
def test_every_string_of_a_chat_request_follows_the_rule(body):
    with pytest.raises(ValidationError) as raised:
        ChatRequest.model_validate(body)
    assert raised.value.errors()[0]["type"] == "invalid_text"


def test_conversation_fields_follow_the_rule():
    for body in ({"metadata": {"\ud800": "v"}}, {"userId": "u\x00"}, {"initialMessage": "x\udc00"}):
        with pytest.raises(ValidationError):
            CreateConversationRequest.model_validate(body)


async def test_a_model_tool_call_with_a_lone_surrogate_is_an_unsuccessful_result():
    call = ToolCall(id="c1", function=FunctionCall(name="rag_search", arguments='{"query": "\\ud800"}'))
    with pytest.raises(InvalidText):
        call.parsed_arguments()
    registry = ToolRegistry([MemorySearchTool([])])
    result = await registry.execute(call, ToolContext(conversation_id="c", caller_id="alice"))
    assert not result.success and result.tool_call_id == "c1"
    assert result.error == "Invalid arguments: query: contains a lone surrogate (U+D800)"
