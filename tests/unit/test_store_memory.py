"""The store contract on the in-memory store (CONVERSATION_STORAGE=memory)."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from rag_orchestrator.config import load_settings
from rag_orchestrator.conversations.memory import MemoryConversationStore
from rag_orchestrator.conversations.store import create_store
from rag_orchestrator.domain.messages import Role
from rag_orchestrator.errors import Conflict
from tests.unit.store_contract import *  # noqa: F403 - the shared cases run here against this store
from tests.unit.store_contract import ALICE, LEASE, conversation, message


@pytest.fixture
def store() -> MemoryConversationStore:
    return MemoryConversationStore()


@pytest.fixture
def transcripts(store):
    return store.transcripts


def test_memory_storage_is_one_store_per_process():
    settings = load_settings(conversation_storage="memory")
    assert create_store(settings) is create_store(load_settings(conversation_storage="memory"))


def test_of_20_turns_started_at_once_exactly_one_runs(store):
    conv = store.create(conversation())
    cid = conv.conversation_id
    barrier = threading.Barrier(20)

    def start(i: int) -> bool:
        barrier.wait()
        try:
            store.start_turn(cid, ALICE, message(cid, f"q{i}"), f"client-{i}", LEASE)
        except Conflict:
            return False
        return True

    with ThreadPoolExecutor(max_workers=20) as pool:
        assert sorted(pool.map(start, range(20))) == [False] * 19 + [True]
    assert store.get(cid, ALICE).message_count == 1


def test_20_threads_taking_turns_count_exactly(store):
    cid = store.create(conversation()).conversation_id

    def turn(i: int) -> None:
        while True:
            try:
                store.start_turn(cid, ALICE, message(cid, "q"), f"client-{i}", LEASE)
                break
            except Conflict:
                time.sleep(0.001)
        store.finish_turn(cid, [message(cid, "answer", Role.ASSISTANT)], tool_calls=2, tokens=10)

    with ThreadPoolExecutor(max_workers=20) as pool:
        list(pool.map(turn, range(20)))
    done = store.get(cid, ALICE)
    assert (done.message_count, done.tool_calls_count, done.total_tokens) == (
        40,
        40,
        20 * (1 + 10),
    )
