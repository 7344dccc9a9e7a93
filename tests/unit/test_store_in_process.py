"""The store contract on the in-process store (CONVERSATION_STORAGE=memory), and what only it has."""

import asyncio
import threading

import pytest

from rag_orchestrator.conversations.in_process import InProcessStore
from rag_orchestrator.conversations.turn_data import Claim, TurnOutcome
from rag_orchestrator.domain.messages import Role
from rag_orchestrator.errors import Conflict
from tests.unit.store_contract import *  # noqa: F403 - the shared cases run here against this store
from tests.unit.store_contract import ALICE, LEASE, conversation, message
from tests.unit.store_features_contract import *  # noqa: F403 - titles, feedback, versions


@pytest.fixture
def store() -> InProcessStore:
    return InProcessStore()


async def test_of_20_turns_started_at_once_exactly_one_runs(store):
    cid = (await store.create(conversation())).conversation_id

    async def start(i: int) -> bool:
        try:
            await store.start_turn(Claim(cid, ALICE, LEASE), message(cid, f"q{i}"), f"client-{i}")
        except Conflict:
            return False
        return True

    assert sorted(await asyncio.gather(*(start(i) for i in range(20)))) == [False] * 19 + [True]
    assert (await store.get(cid, ALICE)).message_count == 1


async def test_its_methods_run_on_the_event_loop_thread(store):
    cid = (await store.create(conversation())).conversation_id
    ran_on: set[int] = set()
    shelf = store._shelf
    original = shelf.owned

    def noted(*args):
        ran_on.add(threading.get_ident())
        return original(*args)

    shelf.owned = noted
    await store.start_turn(Claim(cid, ALICE, LEASE), message(cid, "q"))
    await store.messages(cid, ALICE)
    assert ran_on == {threading.get_ident()}


def test_turns_from_20_threads_count_exactly(store):
    """A store shared with another thread's event loop (as a test client does) stays consistent."""
    cid = asyncio.run(store.create(conversation())).conversation_id

    async def take_turn(i: int) -> None:
        while True:
            try:
                await store.start_turn(Claim(cid, ALICE, LEASE), message(cid, "q"), f"client-{i}")
                break
            except Conflict:
                await asyncio.sleep(0.001)
        await store.finish_turn(
            cid, TurnOutcome([message(cid, "answer", Role.ASSISTANT)], tool_calls=2, tokens=10)
        )

    threads = [threading.Thread(target=asyncio.run, args=(take_turn(i),)) for i in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    done = asyncio.run(store.get(cid, ALICE))
    assert (done.message_count, done.tool_calls_count, done.total_tokens) == (40, 40, 20 * (1 + 10))
