"""Behaviour every ConversationStore shares. Imported by test_store_in_process.py and
test_store_dynamo.py, each of which provides the `store` fixture."""

from __future__ import annotations

from datetime import timedelta

import pytest

from rag_orchestrator.conversations.listing import Listing
from rag_orchestrator.conversations.turn_data import Claim, TurnOutcome
from rag_orchestrator.domain.audit import GENESIS
from rag_orchestrator.domain.base import utcnow
from rag_orchestrator.domain.conversations import Conversation, ConversationMessage, ConversationStatus
from rag_orchestrator.domain.messages import FunctionCall, Role, ToolCall
from rag_orchestrator.errors import BadRequest, Conflict, ConversationNotFound, DuplicateClientMessage

ALICE, BOB = "alice", "bob"
LEASE = 300


def conversation(caller: str = ALICE, *, age_seconds: int = 0, **fields) -> Conversation:
    moment = utcnow() - timedelta(seconds=age_seconds)
    return Conversation(caller_id=caller, created_at=moment, updated_at=moment, **fields)


def message(conversation_id: str, content: str, role: Role = Role.USER, **fields) -> ConversationMessage:
    return ConversationMessage(
        conversation_id=conversation_id, role=role, content=content, token_count=len(content), **fields
    )


def tool_round(conversation_id: str) -> list[ConversationMessage]:
    call = ToolCall(id="call-1", function=FunctionCall(name="rag_search", arguments='{"query": "q"}'))
    return [
        message(conversation_id, "", Role.ASSISTANT, tool_calls=[call], reasoning="secret thoughts"),
        message(conversation_id, "result", Role.TOOL, tool_call_id="call-1", tool_name="rag_search"),
        message(conversation_id, "the answer", Role.ASSISTANT),
    ]


async def turn(store, cid: str, question: str, *answers: ConversationMessage, tool_calls: int = 0) -> None:
    """One whole turn: the question, then what the turn produced."""
    await store.start_turn(Claim(cid, ALICE, LEASE), message(cid, question))
    await store.finish_turn(
        cid, TurnOutcome(list(answers), tool_calls=tool_calls, tokens=sum(len(a.content) for a in answers))
    )


@pytest.fixture
async def conv(store) -> Conversation:
    return await store.create(conversation())


# ------------------------------------------------------------------ create, get, delete


async def test_create_then_get_round_trips(store):
    created = await store.create(conversation(user_id="u1", account_id="a1", metadata={"channel": "web"}))
    fetched = await store.get(created.conversation_id, ALICE)
    assert fetched == created
    assert fetched.status is ConversationStatus.ACTIVE
    assert (fetched.message_count, fetched.total_tokens, fetched.tool_calls_count) == (0, 0, 0)


async def test_create_with_first_messages_counts_them(store):
    new = conversation()
    created = await store.create(new, [message(new.conversation_id, "hello there")])
    assert (created.message_count, created.total_tokens) == (1, len("hello there"))
    assert (await store.get(new.conversation_id, ALICE)).message_count == 1
    page = await store.messages(new.conversation_id, ALICE)
    assert [m.content for m in page.items] == ["hello there"]


async def test_create_with_an_existing_id_is_a_conflict(store, conv):
    with pytest.raises(Conflict):
        await store.create(conv)


async def test_missing_and_foreign_conversations_look_the_same(store, conv):
    cid = conv.conversation_id
    with pytest.raises(ConversationNotFound) as foreign:
        await store.get(cid, BOB)
    with pytest.raises(ConversationNotFound) as missing:
        await store.get("00000000-0000-4000-8000-000000000000", ALICE)
    assert type(foreign.value) is type(missing.value)
    for call in (
        lambda: store.messages(cid, BOB),
        lambda: store.soft_delete(cid, BOB),
        lambda: store.start_turn(Claim(cid, BOB, LEASE), message(cid, "x")),
    ):
        with pytest.raises(ConversationNotFound):
            await call()
    assert (await store.get(cid, ALICE)).message_count == 0


async def test_soft_delete_hides_the_conversation_everywhere(store, conv):
    cid = conv.conversation_id
    await store.soft_delete(cid, ALICE)
    with pytest.raises(ConversationNotFound):
        await store.get(cid, ALICE)
    with pytest.raises(ConversationNotFound):
        await store.soft_delete(cid, ALICE)
    with pytest.raises(ConversationNotFound):
        await store.start_turn(Claim(cid, ALICE, LEASE), message(cid, "x"))
    assert (await store.list_by_caller(ALICE)).items == []


# ------------------------------------------------------------------ listing


async def test_listing_pages_through_45_conversations_newest_first(store):
    made = [await store.create(conversation(age_seconds=100 - i)) for i in range(45)]
    await store.create(conversation(BOB))
    pages, cursor = [], None
    while True:
        page = await store.list_by_caller(ALICE, limit=20, cursor=cursor)
        pages.append(page.items)
        cursor = page.next_cursor
        if cursor is None:
            break
    assert [len(p) for p in pages] == [20, 20, 5]
    listed = [c.conversation_id for p in pages for c in p]
    assert listed == [c.conversation_id for c in reversed(made)]


async def test_listing_an_exact_page_gives_no_cursor_to_an_empty_page(store):
    for i in range(3):
        await store.create(conversation(age_seconds=i))
    page = await store.list_by_caller(ALICE, limit=3)
    assert len(page.items) == 3
    assert page.next_cursor is None


async def test_listing_moves_a_conversation_up_when_it_gets_a_message(store):
    old = await store.create(conversation(age_seconds=50))
    await store.create(conversation(age_seconds=10))
    await turn(store, old.conversation_id, "bump")
    assert (await store.list_by_caller(ALICE)).items[0].conversation_id == old.conversation_id


async def test_listing_filters_by_status_and_leaves_deleted_out(store):
    made = [await store.create(conversation(age_seconds=100 - i)) for i in range(5)]
    await store.soft_delete(made[1].conversation_id, ALICE)
    first = await store.list_by_caller(ALICE, where=Listing(status=ConversationStatus.ACTIVE), limit=2)
    rest = await store.list_by_caller(
        ALICE, where=Listing(status=ConversationStatus.ACTIVE), limit=5, cursor=first.next_cursor
    )
    listed = [c.conversation_id for c in first.items + rest.items]
    assert listed == [c.conversation_id for c in reversed(made) if c is not made[1]]
    assert (await store.list_by_caller(ALICE, where=Listing(status=ConversationStatus.ARCHIVED))).items == []


async def test_another_callers_listing_is_empty_and_their_cursor_is_refused(store):
    for i in range(3):
        await store.create(conversation(age_seconds=i))
    page = await store.list_by_caller(ALICE, limit=1)
    assert (await store.list_by_caller(BOB)).items == []
    with pytest.raises(BadRequest):
        await store.list_by_caller(BOB, limit=1, cursor=page.next_cursor)
    with pytest.raises(BadRequest):
        await store.list_by_caller(
            ALICE, where=Listing(status=ConversationStatus.ACTIVE), limit=1, cursor=page.next_cursor
        )


@pytest.mark.parametrize("cursor", ["garbage", "e30.AAAA", "x" * 5000, "eyJhIjoxfQ.", ".abc"])
async def test_bad_cursors_are_bad_requests(store, conv, cursor):
    with pytest.raises(BadRequest):
        await store.list_by_caller(ALICE, cursor=cursor)
    with pytest.raises(BadRequest):
        await store.messages(conv.conversation_id, ALICE, cursor=cursor)


async def test_a_tampered_cursor_is_refused(store):
    for i in range(3):
        await store.create(conversation(age_seconds=i))
    cursor = (await store.list_by_caller(ALICE, limit=1)).next_cursor
    body, _, mac = cursor.partition(".")
    flipped = body[:-1] + ("A" if body[-1] != "A" else "B")
    with pytest.raises(BadRequest):
        await store.list_by_caller(ALICE, limit=1, cursor=f"{flipped}.{mac}")


@pytest.mark.parametrize("limit", [0, -1, 101])
async def test_limits_out_of_range_are_bad_requests(store, conv, limit):
    with pytest.raises(BadRequest):
        await store.list_by_caller(ALICE, limit=limit)
    with pytest.raises(BadRequest):
        await store.messages(conv.conversation_id, ALICE, limit=limit)


# ------------------------------------------------------------------ messages


async def test_messages_page_oldest_first_and_keep_reasoning(store, conv):
    cid = conv.conversation_id
    await turn(store, cid, "m0", *(message(cid, f"m{i}", Role.ASSISTANT) for i in range(1, 4)))
    await turn(store, cid, "m4", *(message(cid, f"m{i}", Role.ASSISTANT) for i in range(5, 7)))
    await turn(store, cid, "q", *tool_round(cid), tool_calls=1)
    seen, cursor = [], None
    while True:
        page = await store.messages(cid, ALICE, limit=4, cursor=cursor)
        seen += page.items
        cursor = page.next_cursor
        if cursor is None:
            break
    assert [m.content for m in seen] == [*(f"m{i}" for i in range(7)), "q", "", "result", "the answer"]
    assert seen[8].reasoning == "secret thoughts"
    assert seen[8].tool_calls[0].function.name == "rag_search"
    assert seen[9].tool_call_id == "call-1"


async def test_window_is_the_newest_messages_oldest_first(store, conv):
    cid = conv.conversation_id
    for i in range(0, 9, 3):
        await turn(store, cid, f"m{i}", message(cid, f"m{i + 1}", Role.ASSISTANT), message(cid, f"m{i + 2}"))
    assert [m.content for m in await store.window(cid, 4)] == ["m5", "m6", "m7", "m8"]
    assert [m.content for m in await store.window(cid, 50)] == [f"m{i}" for i in range(9)]


async def test_window_of_an_empty_conversation(store, conv):
    assert await store.window(conv.conversation_id, 5) == []


# ------------------------------------------------------------------ turns


async def test_a_turn_stores_messages_counts_and_releases_the_lock(store, conv):
    cid = conv.conversation_id
    await store.start_turn(Claim(cid, ALICE, LEASE), message(cid, "question"), "c-1")
    started = await store.get(cid, ALICE)
    assert (started.message_count, started.total_tokens) == (1, len("question"))
    with pytest.raises(Conflict, match="already running"):
        await store.start_turn(Claim(cid, ALICE, LEASE), message(cid, "second"), "c-2")
    await store.finish_turn(cid, TurnOutcome(tool_round(cid), tool_calls=1, tokens=120))
    done = await store.get(cid, ALICE)
    assert (done.message_count, done.tool_calls_count, done.total_tokens) == (4, 1, len("question") + 120)
    assert done.updated_at > conv.updated_at and done.last_message_at is not None
    assert [m.content for m in await store.window(cid, 10)] == ["question", "", "result", "the answer"]
    await store.start_turn(Claim(cid, ALICE, LEASE), message(cid, "next"), "c-2")
    assert (await store.get(cid, ALICE)).message_count == 5


async def test_a_repeated_client_message_id_starts_no_second_turn(store, conv):
    cid = conv.conversation_id
    first = message(cid, "question")
    await store.start_turn(Claim(cid, ALICE, LEASE), first, "same")
    with pytest.raises(DuplicateClientMessage) as while_running:
        await store.start_turn(Claim(cid, ALICE, LEASE), message(cid, "question"), "same")
    await store.finish_turn(
        cid, TurnOutcome([message(cid, "answer", Role.ASSISTANT)], tool_calls=0, tokens=5)
    )
    with pytest.raises(DuplicateClientMessage) as after:
        await store.start_turn(Claim(cid, ALICE, LEASE), message(cid, "question"), "same")
    assert while_running.value.message_id == after.value.message_id == first.message_id
    assert isinstance(after.value, Conflict)
    assert (await store.get(cid, ALICE)).message_count == 2


async def test_abort_releases_the_lock_and_keeps_the_user_message(store, conv):
    cid = conv.conversation_id
    await store.start_turn(Claim(cid, ALICE, LEASE), message(cid, "q1"))
    await store.abort_turn(cid)
    await store.start_turn(Claim(cid, ALICE, LEASE), message(cid, "q2"))
    assert [m.content for m in await store.window(cid, 5)] == ["q1", "q2"]


async def test_an_expired_lease_no_longer_blocks(store, conv):
    cid = conv.conversation_id
    await store.start_turn(Claim(cid, ALICE, -5), message(cid, "q1"))
    await store.start_turn(Claim(cid, ALICE, LEASE), message(cid, "q2"))
    assert (await store.get(cid, ALICE)).message_count == 2


async def test_an_interrupted_turn_marks_its_last_answer(store, conv):
    cid = conv.conversation_id
    await store.start_turn(Claim(cid, ALICE, LEASE), message(cid, "q"))
    await store.finish_turn(
        cid, TurnOutcome([message(cid, "partial", Role.ASSISTANT)], tool_calls=0, tokens=3, interrupted=True)
    )
    window = await store.window(cid, 5)
    assert [(m.content, m.interrupted) for m in window] == [("q", False), ("partial", True)]


async def test_finish_turn_with_no_messages_only_releases(store, conv):
    cid = conv.conversation_id
    await store.start_turn(Claim(cid, ALICE, LEASE), message(cid, "q"))
    await store.finish_turn(cid, TurnOutcome([], tool_calls=0, tokens=0, interrupted=True))
    await store.start_turn(Claim(cid, ALICE, LEASE), message(cid, "q2"))


async def test_a_user_messages_metadata_is_kept(store, conv):
    cid = conv.conversation_id
    await store.start_turn(Claim(cid, ALICE, LEASE), message(cid, "q", metadata={"screen": "orders"}))
    assert [m.metadata for m in (await store.messages(cid, ALICE)).items] == [{"screen": "orders"}]


# ------------------------------------------------------------------ isolation


def _tamper(conversation: Conversation) -> None:
    conversation.metadata["channel"] = "tampered"
    conversation.message_count = 999


def _tamper_message(message: ConversationMessage) -> None:
    message.content, message.message_id = "tampered", "tampered"
    if message.tool_calls is not None:
        message.tool_calls[0].function.arguments = "tampered"
        message.tool_calls.append(message.tool_calls[0])


async def test_what_a_store_returns_is_the_callers_own(store):
    new = conversation(metadata={"channel": "web"})
    cid = new.conversation_id
    await store.create(new, tool_round(cid))
    for got in (await store.get(cid, ALICE), (await store.list_by_caller(ALICE)).items[0]):
        _tamper(got)
    for got in (*await store.window(cid, 5), *(await store.messages(cid, ALICE)).items):
        _tamper_message(got)
    again = await store.get(cid, ALICE)
    assert (again.metadata, again.message_count) == ({"channel": "web"}, 3)
    assert [m.content for m in await store.window(cid, 5)] == ["", "result", "the answer"]
    assert (await store.messages(cid, ALICE)).items[0].tool_calls == tool_round(cid)[0].tool_calls


async def test_what_a_store_was_given_is_still_the_callers_own(store):
    new = conversation(metadata={"channel": "web"})
    cid = new.conversation_id
    call, result, _ = tool_round(cid)
    await store.create(new, [call, result])
    question = message(cid, "question")
    await store.start_turn(Claim(cid, ALICE, LEASE), question, "c-1")
    answer = message(cid, "the answer", Role.ASSISTANT)
    await store.finish_turn(cid, TurnOutcome([answer], tool_calls=0, tokens=1))
    _tamper(new)
    for sent in (call, result, question, answer):
        _tamper_message(sent)
    again = await store.get(cid, ALICE)
    assert (again.metadata, again.message_count) == ({"channel": "web"}, 4)
    window = await store.window(cid, 5)
    assert [m.content for m in window] == ["", "result", "question", "the answer"]
    assert window[0].tool_calls == tool_round(cid)[0].tool_calls
    with pytest.raises(DuplicateClientMessage) as repeated:
        await store.start_turn(Claim(cid, ALICE, LEASE), message(cid, "question"), "c-1")
    assert repeated.value.message_id == window[2].message_id != "tampered"


# ------------------------------------------------------------------ audit records


async def test_the_audit_chain_grows_one_record_per_turn_and_outlives_a_deletion(store, conv):
    cid = conv.conversation_id
    context = await store.context(cid, 5)
    assert (context.messages, context.audit_head, context.owner) == ([], GENESIS, ALICE)
    for n in range(2):
        await store.start_turn(Claim(cid, ALICE, LEASE), message(cid, f"q{n}"))
        context = await store.context(cid, 5)
        answer = message(cid, f"a{n}", Role.ASSISTANT)
        await store.finish_turn(
            cid, TurnOutcome([answer], tool_calls=0, tokens=1, audit={"recordId": f"R{n}"}, context=context)
        )
    trail = await store.audit(cid)
    first, second = trail.records
    assert (first["prevHash"], second["prevHash"]) == (GENESIS, first["hash"])
    assert trail.chain_valid and (await store.context(cid, 5)).audit_head == second["hash"]
    await store.soft_delete(cid, ALICE)
    assert (await store.audit(cid)).records == trail.records  # deleted, still audited
    with pytest.raises(ConversationNotFound):
        await store.audit("9d4c2f1e-5b6a-4e3d-8c7b-0a1f2e3d4c5b")
