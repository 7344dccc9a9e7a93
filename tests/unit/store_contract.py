"""Behaviour every ConversationStore shares. Imported by test_store_memory.py and
test_store_dynamo.py, each of which provides the `store` and `transcripts` fixtures."""

from __future__ import annotations

from datetime import timedelta

import pytest

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


@pytest.fixture
def conv(store) -> Conversation:
    return store.create(conversation())


# ------------------------------------------------------------------ create, get, delete


def test_create_then_get_round_trips(store):
    created = store.create(conversation(user_id="u1", account_id="a1", metadata={"channel": "web"}))
    fetched = store.get(created.conversation_id, ALICE)
    assert fetched == created
    assert fetched.status is ConversationStatus.ACTIVE
    assert (fetched.message_count, fetched.total_tokens, fetched.tool_calls_count) == (0, 0, 0)


def test_create_with_first_messages_counts_them(store):
    new = conversation()
    created = store.create(new, [message(new.conversation_id, "hello there")])
    assert (created.message_count, created.total_tokens) == (1, len("hello there"))
    assert store.get(new.conversation_id, ALICE).message_count == 1
    assert [m.content for m in store.messages(new.conversation_id, ALICE).items] == ["hello there"]


def test_create_with_an_existing_id_is_a_conflict(store, conv):
    with pytest.raises(Conflict):
        store.create(conv)


def test_missing_and_foreign_conversations_look_the_same(store, conv):
    with pytest.raises(ConversationNotFound) as foreign:
        store.get(conv.conversation_id, BOB)
    with pytest.raises(ConversationNotFound) as missing:
        store.get("00000000-0000-4000-8000-000000000000", ALICE)
    assert type(foreign.value) is type(missing.value)
    for call in (
        lambda: store.messages(conv.conversation_id, BOB),
        lambda: store.load(conv.conversation_id, BOB, 5),
        lambda: store.soft_delete(conv.conversation_id, BOB),
        lambda: store.append(conv.conversation_id, BOB, [message(conv.conversation_id, "x")]),
        lambda: store.start_turn(conv.conversation_id, BOB, message(conv.conversation_id, "x"), None, LEASE),
    ):
        with pytest.raises(ConversationNotFound):
            call()
    assert store.get(conv.conversation_id, ALICE).message_count == 0


def test_soft_delete_hides_the_conversation_everywhere(store, conv):
    store.soft_delete(conv.conversation_id, ALICE)
    with pytest.raises(ConversationNotFound):
        store.get(conv.conversation_id, ALICE)
    with pytest.raises(ConversationNotFound):
        store.soft_delete(conv.conversation_id, ALICE)
    with pytest.raises(ConversationNotFound):
        store.start_turn(conv.conversation_id, ALICE, message(conv.conversation_id, "x"), None, LEASE)
    assert store.list_by_caller(ALICE).items == []


# ------------------------------------------------------------------ listing


def test_listing_pages_through_45_conversations_newest_first(store):
    made = [store.create(conversation(age_seconds=100 - i)) for i in range(45)]
    store.create(conversation(BOB))
    pages, cursor = [], None
    while True:
        page = store.list_by_caller(ALICE, limit=20, cursor=cursor)
        pages.append(page.items)
        cursor = page.next_cursor
        if cursor is None:
            break
    assert [len(p) for p in pages] == [20, 20, 5]
    listed = [c.conversation_id for p in pages for c in p]
    assert listed == [c.conversation_id for c in reversed(made)]


def test_listing_an_exact_page_gives_no_cursor_to_an_empty_page(store):
    for i in range(3):
        store.create(conversation(age_seconds=i))
    page = store.list_by_caller(ALICE, limit=3)
    assert len(page.items) == 3
    assert page.next_cursor is None


def test_listing_moves_a_conversation_up_when_it_gets_a_message(store):
    old = store.create(conversation(age_seconds=50))
    store.create(conversation(age_seconds=10))
    store.append(old.conversation_id, ALICE, [message(old.conversation_id, "bump")])
    assert store.list_by_caller(ALICE).items[0].conversation_id == old.conversation_id


def test_listing_filters_by_status_across_pages(store, transcripts):
    made = [store.create(conversation(age_seconds=100 - i)) for i in range(12)]
    archived = made[::3]
    for c in archived:
        store.mark_archived(c.conversation_id, transcripts.write(ALICE, c.conversation_id, []))
    store.soft_delete(made[1].conversation_id, ALICE)
    first = store.list_by_caller(ALICE, status=ConversationStatus.ARCHIVED, limit=3)
    second = store.list_by_caller(
        ALICE, status=ConversationStatus.ARCHIVED, limit=3, cursor=first.next_cursor
    )
    assert [c.conversation_id for c in first.items + second.items] == [
        c.conversation_id for c in reversed(archived)
    ]
    assert second.next_cursor is None
    active = store.list_by_caller(ALICE, status=ConversationStatus.ACTIVE, limit=100).items
    assert {c.conversation_id for c in active} == {
        c.conversation_id for c in made if c not in archived and c is not made[1]
    }
    assert len(store.list_by_caller(ALICE, limit=100).items) == 11


def test_list_by_user(store):
    mine = store.create(conversation(user_id="u-7"))
    theirs = store.create(conversation(BOB, user_id="u-7"))
    store.create(conversation(user_id="u-8"))
    assert {c.conversation_id for c in store.list_by_user("u-7").items} == {
        mine.conversation_id,
        theirs.conversation_id,
    }
    assert [c.conversation_id for c in store.list_by_user("u-7", caller_id=BOB).items] == [
        theirs.conversation_id
    ]


def test_another_callers_listing_is_empty_and_their_cursor_is_refused(store):
    for i in range(3):
        store.create(conversation(age_seconds=i))
    page = store.list_by_caller(ALICE, limit=1)
    assert store.list_by_caller(BOB).items == []
    with pytest.raises(BadRequest):
        store.list_by_caller(BOB, limit=1, cursor=page.next_cursor)
    with pytest.raises(BadRequest):
        store.list_by_caller(ALICE, status=ConversationStatus.ACTIVE, limit=1, cursor=page.next_cursor)


@pytest.mark.parametrize("cursor", ["garbage", "e30.AAAA", "x" * 5000, "eyJhIjoxfQ.", ".abc"])
def test_bad_cursors_are_bad_requests(store, conv, cursor):
    with pytest.raises(BadRequest):
        store.list_by_caller(ALICE, cursor=cursor)
    with pytest.raises(BadRequest):
        store.messages(conv.conversation_id, ALICE, cursor=cursor)


def test_a_tampered_cursor_is_refused(store):
    for i in range(3):
        store.create(conversation(age_seconds=i))
    cursor = store.list_by_caller(ALICE, limit=1).next_cursor
    body, _, mac = cursor.partition(".")
    flipped = body[:-1] + ("A" if body[-1] != "A" else "B")
    with pytest.raises(BadRequest):
        store.list_by_caller(ALICE, limit=1, cursor=f"{flipped}.{mac}")


@pytest.mark.parametrize("limit", [0, -1, 101])
def test_limits_out_of_range_are_bad_requests(store, conv, limit):
    with pytest.raises(BadRequest):
        store.list_by_caller(ALICE, limit=limit)
    with pytest.raises(BadRequest):
        store.messages(conv.conversation_id, ALICE, limit=limit)


# ------------------------------------------------------------------ messages


def test_append_adds_messages_and_counters(store, conv):
    cid = conv.conversation_id
    store.append(cid, ALICE, [message(cid, "abcd"), message(cid, "efgh", Role.ASSISTANT)], tool_calls=2)
    after = store.get(cid, ALICE)
    assert (after.message_count, after.total_tokens, after.tool_calls_count) == (2, 8, 2)
    assert after.updated_at > conv.updated_at
    assert after.last_message_at is not None


def test_messages_page_oldest_first_and_keep_reasoning(store, conv):
    cid = conv.conversation_id
    sent = [message(cid, f"m{i}") for i in range(7)]
    store.append(cid, ALICE, sent[:3])
    store.append(cid, ALICE, sent[3:])
    store.append(cid, ALICE, tool_round(cid))
    seen, cursor = [], None
    while True:
        page = store.messages(cid, ALICE, limit=4, cursor=cursor)
        seen += page.items
        cursor = page.next_cursor
        if cursor is None:
            break
    assert [m.content for m in seen] == [*(f"m{i}" for i in range(7)), "", "result", "the answer"]
    assert seen[7].reasoning == "secret thoughts"
    assert seen[7].tool_calls[0].function.name == "rag_search"
    assert seen[8].tool_call_id == "call-1"
    assert [m.message_id for m in seen[:7]] == [m.message_id for m in sent]


def test_window_is_the_newest_messages_oldest_first(store, conv):
    cid = conv.conversation_id
    for i in range(9):
        store.append(cid, ALICE, [message(cid, f"m{i}")])
    assert [m.content for m in store.window(cid, 4)] == ["m5", "m6", "m7", "m8"]
    assert [m.content for m in store.window(cid, 50)] == [f"m{i}" for i in range(9)]
    loaded, window = store.load(cid, ALICE, 3)
    assert loaded.message_count == 9
    assert [m.content for m in window] == ["m6", "m7", "m8"]


def test_window_of_an_empty_conversation(store, conv):
    assert store.window(conv.conversation_id, 5) == []
    loaded, window = store.load(conv.conversation_id, ALICE, 5)
    assert (loaded.conversation_id, window) == (conv.conversation_id, [])


# ------------------------------------------------------------------ turns


def test_a_turn_stores_messages_counts_and_releases_the_lock(store, conv):
    cid = conv.conversation_id
    store.start_turn(cid, ALICE, message(cid, "question"), "c-1", LEASE)
    started = store.get(cid, ALICE)
    assert (started.message_count, started.total_tokens) == (1, len("question"))
    with pytest.raises(Conflict, match="already running"):
        store.start_turn(cid, ALICE, message(cid, "second"), "c-2", LEASE)
    store.finish_turn(cid, tool_round(cid), tool_calls=1, tokens=120)
    done = store.get(cid, ALICE)
    assert (done.message_count, done.tool_calls_count, done.total_tokens) == (4, 1, len("question") + 120)
    assert [m.content for m in store.window(cid, 10)] == ["question", "", "result", "the answer"]
    store.start_turn(cid, ALICE, message(cid, "next"), "c-2", LEASE)
    assert store.get(cid, ALICE).message_count == 5


def test_a_repeated_client_message_id_starts_no_second_turn(store, conv):
    cid = conv.conversation_id
    first = message(cid, "question")
    store.start_turn(cid, ALICE, first, "same", LEASE)
    with pytest.raises(DuplicateClientMessage) as while_running:
        store.start_turn(cid, ALICE, message(cid, "question"), "same", LEASE)
    store.finish_turn(cid, [message(cid, "answer", Role.ASSISTANT)], tool_calls=0, tokens=5)
    with pytest.raises(DuplicateClientMessage) as after:
        store.start_turn(cid, ALICE, message(cid, "question"), "same", LEASE)
    assert while_running.value.message_id == after.value.message_id == first.message_id
    assert isinstance(after.value, Conflict)
    assert store.get(cid, ALICE).message_count == 2


def test_abort_releases_the_lock_and_keeps_the_user_message(store, conv):
    cid = conv.conversation_id
    store.start_turn(cid, ALICE, message(cid, "q1"), None, LEASE)
    store.abort_turn(cid)
    store.start_turn(cid, ALICE, message(cid, "q2"), None, LEASE)
    assert [m.content for m in store.window(cid, 5)] == ["q1", "q2"]


def test_an_expired_lease_no_longer_blocks(store, conv):
    cid = conv.conversation_id
    store.start_turn(cid, ALICE, message(cid, "q1"), None, -5)
    store.start_turn(cid, ALICE, message(cid, "q2"), None, LEASE)
    assert store.get(cid, ALICE).message_count == 2


def test_an_interrupted_turn_marks_its_last_answer(store, conv):
    cid = conv.conversation_id
    store.start_turn(cid, ALICE, message(cid, "q"), None, LEASE)
    store.finish_turn(
        cid, [message(cid, "partial", Role.ASSISTANT)], tool_calls=0, tokens=3, interrupted=True
    )
    assert [(m.content, m.interrupted) for m in store.window(cid, 5)] == [("q", False), ("partial", True)]


def test_finish_turn_with_no_messages_only_releases(store, conv):
    cid = conv.conversation_id
    store.start_turn(cid, ALICE, message(cid, "q"), None, LEASE)
    store.finish_turn(cid, [], tool_calls=0, tokens=0, interrupted=True)
    store.start_turn(cid, ALICE, message(cid, "q2"), None, LEASE)


# ------------------------------------------------------------------ isolation


def _tamper(conversation: Conversation) -> None:
    conversation.metadata["channel"] = "tampered"
    conversation.message_count = 999


def _tamper_message(message: ConversationMessage) -> None:
    message.content, message.message_id = "tampered", "tampered"
    if message.tool_calls is not None:
        message.tool_calls[0].function.arguments = "tampered"
        message.tool_calls.append(message.tool_calls[0])


def test_what_a_store_returns_is_the_callers_own(store):
    new = conversation(metadata={"channel": "web"})
    cid = new.conversation_id
    store.create(new, tool_round(cid))
    for got in (store.get(cid, ALICE), store.load(cid, ALICE, 5)[0], store.list_by_caller(ALICE).items[0]):
        _tamper(got)
    for got in (*store.window(cid, 5), *store.load(cid, ALICE, 5)[1], *store.messages(cid, ALICE).items):
        _tamper_message(got)
    again = store.get(cid, ALICE)
    assert (again.metadata, again.message_count) == ({"channel": "web"}, 3)
    assert [m.content for m in store.window(cid, 5)] == ["", "result", "the answer"]
    assert store.messages(cid, ALICE).items[0].tool_calls == tool_round(cid)[0].tool_calls


def test_what_a_store_was_given_is_still_the_callers_own(store):
    new = conversation(metadata={"channel": "web"})
    cid = new.conversation_id
    call, result, _ = tool_round(cid)
    store.create(new, [call])
    store.append(cid, ALICE, [result])
    question = message(cid, "question")
    store.start_turn(cid, ALICE, question, "c-1", LEASE)
    answer = message(cid, "the answer", Role.ASSISTANT)
    store.finish_turn(cid, [answer], tool_calls=0, tokens=1)
    _tamper(new)
    for sent in (call, result, question, answer):
        _tamper_message(sent)
    again = store.get(cid, ALICE)
    assert (again.metadata, again.message_count) == ({"channel": "web"}, 4)
    window = store.window(cid, 5)
    assert [m.content for m in window] == ["", "result", "question", "the answer"]
    assert window[0].tool_calls == tool_round(cid)[0].tool_calls
    with pytest.raises(DuplicateClientMessage) as repeated:
        store.start_turn(cid, ALICE, message(cid, "question"), "c-1", LEASE)
    assert repeated.value.message_id == window[2].message_id != "tampered"


# ------------------------------------------------------------------ archived


def test_an_archived_conversation_reads_its_transcript(store, transcripts):
    new = conversation()
    cid = new.conversation_id
    old = [message(cid, "old question"), message(cid, "old answer", Role.ASSISTANT, reasoning="why")]
    store.create(new)
    store.mark_archived(cid, transcripts.write(ALICE, cid, old))
    archived = store.get(cid, ALICE)
    assert archived.status is ConversationStatus.ARCHIVED
    assert archived.s3_key == f"transcripts/{ALICE}/{cid}.jsonl"
    page = store.messages(cid, ALICE, limit=1)
    assert [m.content for m in page.items] == ["old question"]
    rest = store.messages(cid, ALICE, limit=5, cursor=page.next_cursor)
    assert [(m.content, m.reasoning) for m in rest.items] == [("old answer", "why")]
    assert rest.next_cursor is None
    assert [m.content for m in store.window(cid, 5)] == ["old question", "old answer"]

    store.start_turn(cid, ALICE, message(cid, "new question"), None, LEASE)
    store.finish_turn(cid, [message(cid, "new answer", Role.ASSISTANT)], tool_calls=0, tokens=1)
    continued = store.get(cid, ALICE)  # active again; the transcript keeps the older messages
    assert (continued.status, continued.s3_key) == (ConversationStatus.ACTIVE, archived.s3_key)
    contents = [m.content for m in store.messages(cid, ALICE, limit=10).items]
    assert contents == ["old question", "old answer", "new question", "new answer"]
    assert [m.content for m in store.window(cid, 3)] == ["old answer", "new question", "new answer"]


def test_archiving_twice_or_a_missing_conversation_is_refused(store, conv, transcripts):
    key = transcripts.write(ALICE, conv.conversation_id, [])
    store.mark_archived(conv.conversation_id, key)
    with pytest.raises(ConversationNotFound):
        store.mark_archived(conv.conversation_id, key)
