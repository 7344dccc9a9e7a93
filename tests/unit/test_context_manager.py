"""ContextManager over the memory store: rolling window, creation, messages, token estimates."""

import threading

import pytest

from rag_orchestrator.config import load_settings
from rag_orchestrator.conversations.context import ContextManager, get_context_manager
from rag_orchestrator.conversations.memory import MemoryConversationStore
from rag_orchestrator.domain.conversations import ConversationMessage, CreateConversationRequest
from rag_orchestrator.domain.messages import Message, Role
from rag_orchestrator.errors import Conflict, ConversationNotFound


class ThreadNoting:
    """A store that notes the thread each of its methods ran on."""

    def __init__(self, inner: MemoryConversationStore) -> None:
        self.inner, self.blocking, self.threads = inner, inner.blocking, set()

    def __getattr__(self, name: str):
        method = getattr(self.inner, name)

        def noted(*args, **kwargs):
            self.threads.add(threading.get_ident())
            return method(*args, **kwargs)

        return noted


class BlockingMemoryStore(MemoryConversationStore):
    blocking = True


@pytest.fixture
def contexts() -> ContextManager:
    return ContextManager(MemoryConversationStore(), window_size=3)


@pytest.mark.parametrize(("text", "tokens"), [("", 1), ("abc", 1), ("abcd", 1), ("a" * 41, 10)])
def test_estimate_tokens_is_about_four_characters_a_token(text, tokens):
    assert ContextManager.estimate_tokens(text) == tokens


async def test_create_stores_the_initial_message_first(contexts):
    request = CreateConversationRequest(user_id="u", initial_message="hello world!", metadata={"k": "v"})
    created = await contexts.create(request, "alice")
    assert (created.caller_id, created.user_id, created.metadata) == ("alice", "u", {"k": "v"})
    assert (created.message_count, created.total_tokens) == (1, 3)
    page = await contexts.messages(created.conversation_id, "alice")
    assert [(m.role, m.content) for m in page.items] == [(Role.USER, "hello world!")]


async def test_load_is_the_rolling_window(contexts):
    conv = await contexts.create(CreateConversationRequest(), "alice")
    for i in range(5):
        await contexts.add_message(
            conv.conversation_id, "alice", Message(role=Role.USER, content=f"message {i}")
        )
    context = await contexts.load(conv.conversation_id, "alice")
    assert [m.content for m in context.messages] == ["message 2", "message 3", "message 4"]
    assert all(isinstance(m, Message) for m in context.messages)
    assert context.total_tokens == 3 * ContextManager.estimate_tokens("message 2")
    assert context.conversation.message_count == 5
    with pytest.raises(ConversationNotFound):
        await contexts.load(conv.conversation_id, "bob")


async def test_add_message_moves_stats_and_timestamps(contexts):
    conv = await contexts.create(CreateConversationRequest(), "alice")
    stored = await contexts.add_message(
        conv.conversation_id, "alice", Message(role=Role.ASSISTANT, content="x" * 40), token_count=7
    )
    after = await contexts.get(conv.conversation_id, "alice")
    assert (after.message_count, after.total_tokens) == (1, 7)
    assert after.last_message_at is not None and after.updated_at >= conv.updated_at
    assert stored.token_count == 7


async def test_recent_is_newest_first(contexts):
    first = await contexts.create(CreateConversationRequest(), "alice")
    second = await contexts.create(CreateConversationRequest(), "alice")
    await contexts.add_message(first.conversation_id, "alice", Message(role=Role.USER, content="bump"))
    recent = await contexts.recent("alice", limit=5)
    assert [c.conversation_id for c in recent] == [first.conversation_id, second.conversation_id]


async def test_turn_wrappers(contexts):
    conv = await contexts.create(CreateConversationRequest(), "alice")
    cid = conv.conversation_id
    user = ConversationMessage(conversation_id=cid, role=Role.USER, content="q", token_count=1)
    await contexts.start_turn(cid, "alice", user, "c-1", lease_seconds=60)
    with pytest.raises(Conflict):
        await contexts.start_turn(cid, "alice", user.model_copy(update={"message_id": "x"}), None)
    window = await contexts.window(cid)
    assert [m.content for m in window] == ["q"]
    answer = contexts.stored(cid, Message(role=Role.ASSISTANT, content="a", reasoning="hidden"))
    await contexts.finish_turn(cid, [answer], tool_calls=0, tokens=10)
    assert [m.reasoning for m in await contexts.window(cid)] == [None, "hidden"]
    await contexts.start_turn(cid, "alice", user.model_copy(update={"message_id": "y"}), None)
    await contexts.abort_turn(cid)
    assert (await contexts.get(cid, "alice")).message_count == 3


def test_the_factory_follows_conversation_storage():
    settings = load_settings(conversation_storage="memory", conversation_rolling_window=7)
    manager = get_context_manager(settings)
    assert manager is get_context_manager(settings)
    assert isinstance(manager.store, MemoryConversationStore)
    assert manager.window_size == 7


async def _every_call(contexts: ContextManager) -> None:
    conv = await contexts.create(CreateConversationRequest(initial_message="hi"), "alice")
    cid = conv.conversation_id
    await contexts.get(cid, "alice")
    await contexts.list_conversations("alice")
    await contexts.add_message(cid, "alice", Message(role=Role.USER, content="more"))
    await contexts.messages(cid, "alice")
    await contexts.load(cid, "alice")
    user = contexts.stored(cid, Message(role=Role.USER, content="q"))
    await contexts.start_turn(cid, "alice", user, "c-1")
    await contexts.window(cid)
    await contexts.finish_turn(
        cid, [contexts.stored(cid, Message(role=Role.ASSISTANT, content="a"))], tool_calls=0, tokens=1
    )
    await contexts.abort_turn(cid)
    await contexts.delete(cid, "alice")


async def test_the_memory_store_is_called_on_the_event_loop_thread():
    store = ThreadNoting(MemoryConversationStore())
    await _every_call(ContextManager(store))
    assert store.threads == {threading.get_ident()}


async def test_a_blocking_store_is_called_in_a_worker_thread():
    store = ThreadNoting(BlockingMemoryStore())
    await _every_call(ContextManager(store))
    assert store.threads and threading.get_ident() not in store.threads


async def test_what_the_context_manager_returns_cannot_change_the_store(contexts):
    request = CreateConversationRequest(initial_message="hello", metadata={"k": "v"})
    created = await contexts.create(request, "alice")
    cid = created.conversation_id
    created.metadata["k"] = "changed"
    fetched = await contexts.get(cid, "alice")
    fetched.metadata["k"], fetched.message_count = "changed", 0
    (await contexts.messages(cid, "alice")).items[0].content = "changed"
    (await contexts.load(cid, "alice")).conversation.metadata.clear()
    again = await contexts.load(cid, "alice")
    assert (again.conversation.metadata, again.conversation.message_count) == ({"k": "v"}, 1)
    assert [m.content for m in again.messages] == ["hello"]
