"""The conversation models' own rules: token estimates, a new conversation, a stored message, the factory."""

import pytest

from rag_orchestrator.aws import AwsClients
from rag_orchestrator.config import load_settings
from rag_orchestrator.conversations.factory import create_store
from rag_orchestrator.conversations.in_process import InProcessStore
from rag_orchestrator.domain.conversations import (
    ConversationMessage,
    CreateConversationRequest,
    estimate_tokens,
    new_conversation,
)
from rag_orchestrator.domain.messages import Message, Role


@pytest.mark.parametrize(("text", "tokens"), [("", 1), ("abc", 1), ("abcd", 1), ("a" * 41, 10)])
def test_estimate_tokens_is_about_four_characters_a_token(text, tokens):
    assert estimate_tokens(text) == tokens


async def test_a_new_conversation_stores_its_initial_message_first():
    request = CreateConversationRequest(user_id="u", initial_message="hello world!", metadata={"k": "v"})
    conversation, first = new_conversation(request, "alice")
    store = InProcessStore()
    created = await store.create(conversation, first)
    assert (created.caller_id, created.user_id, created.metadata) == ("alice", "u", {"k": "v"})
    assert (created.message_count, created.total_tokens) == (1, 3)
    page = await store.messages(created.conversation_id, "alice")
    assert [(m.role, m.content) for m in page.items] == [(Role.USER, "hello world!")]


def test_a_stored_message_keeps_what_the_model_needs_and_estimates_tokens():
    message = Message(role=Role.ASSISTANT, content="x" * 40, reasoning="hidden")
    stored = ConversationMessage.of("c-1", message)
    assert (stored.conversation_id, stored.role, stored.reasoning, stored.token_count) == (
        "c-1",
        Role.ASSISTANT,
        "hidden",
        10,
    )
    assert ConversationMessage.of("c-1", message, 7).token_count == 7
    assert stored.to_message() == message
    assert ConversationMessage.of("c-1", message).message_id > stored.message_id  # time-ordered


def test_the_factory_follows_conversation_storage():
    assert isinstance(
        create_store(load_settings(conversation_storage="memory"), AwsClients()), InProcessStore
    )
