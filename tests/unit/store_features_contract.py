"""Titles, feedback and versions, as every ConversationStore keeps them. Imported by
test_store_in_process.py and test_store_dynamo.py, each of which provides the `store` fixture."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from rag_orchestrator.conversations.listing import Listing
from rag_orchestrator.conversations.turn_data import Claim, TurnOutcome
from rag_orchestrator.conversations.versions import PLAIN
from rag_orchestrator.domain.base import utcnow
from rag_orchestrator.domain.feedback import Feedback
from rag_orchestrator.domain.messages import Role
from rag_orchestrator.errors import (
    BadRequest,
    Conflict,
    ConversationNotFound,
    MessageNotFound,
    NotLastExchange,
)
from tests.unit.store_contract import ALICE, LEASE, conversation, message, tool_round, turn

BOB = "bob"


async def answered(store, cid: str, question: str, answer: str) -> None:
    await turn(store, cid, question, message(cid, answer, Role.ASSISTANT))


async def transcript(store, cid: str, *, all_versions: bool = False):
    return (await store.messages(cid, ALICE, limit=100, all_versions=all_versions)).items


# ------------------------------------------------------------------ titles


async def test_a_title_is_stored_on_create_and_replaced_by_update(store):
    created = await store.create(conversation(title="Refund questions"))
    assert (await store.get(created.conversation_id, ALICE)).title == "Refund questions"
    updated = await store.update(created.conversation_id, ALICE, title="Refunds", metadata={"k": "v"})
    assert (updated.title, updated.metadata) == ("Refunds", {"k": "v"})
    assert (await store.get(created.conversation_id, ALICE)).title == "Refunds"
    with pytest.raises(ConversationNotFound):
        await store.update(created.conversation_id, BOB, title="Mine now")


async def test_an_automatic_title_never_replaces_one_already_there(store):
    untitled = await store.create(conversation())
    assert await store.set_auto_title(untitled.conversation_id, "First")
    assert not await store.set_auto_title(untitled.conversation_id, "Second")
    await store.update(untitled.conversation_id, ALICE, title="The owner's")
    assert not await store.set_auto_title(untitled.conversation_id, "Third")
    assert (await store.get(untitled.conversation_id, ALICE)).title == "The owner's"


async def test_a_deleted_conversation_gets_no_automatic_title_and_a_turn_reads_whether_one_has_one(store):
    untitled, titled = await store.create(conversation()), await store.create(conversation(title="Mine"))
    assert (await store.context(untitled.conversation_id, 10)).titled is False
    assert (await store.context(titled.conversation_id, 10)).titled is True
    await store.soft_delete(untitled.conversation_id, ALICE)
    assert not await store.set_auto_title(untitled.conversation_id, "Too late")


async def test_a_summary_is_stored_over_the_one_it_was_built_on_and_read_with_the_window(store):
    made = await store.create(conversation())
    cid = made.conversation_id
    assert await store.set_summary(cid, "User asked about refunds.", "M1", None)
    assert not await store.set_summary(cid, "A stale writer's", "M2", None)  # built on no summary
    assert await store.set_summary(cid, "Refunds, then exports.", "M3", "M1")
    read = await store.get(cid, ALICE)
    assert (read.summary, read.summarized_through) == ("Refunds, then exports.", "M3")
    context = await store.context(cid, 10)
    assert (context.summary, context.summarized_through) == ("Refunds, then exports.", "M3")
    await store.soft_delete(cid, ALICE)
    assert not await store.set_summary(cid, "Too late", "M4", "M3")


async def test_the_listing_filters_by_user_id_and_a_created_at_range_and_pages(store):
    base = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    for day, user in [(0, "u-1"), (1, "u-2"), (2, "u-1"), (3, "u-1"), (4, None)]:
        made = conversation(title=f"day {day}").model_copy(
            update={"user_id": user, "created_at": base + timedelta(days=day, microseconds=day + 1)}
        )
        await store.create(made)
    await store.create(conversation(BOB).model_copy(update={"user_id": "u-1", "created_at": base}))

    async def found(limit: int = 20, **where: Any) -> list[str]:
        names, cursor = [], None
        while True:
            page = await store.list_by_caller(ALICE, where=Listing(**where), limit=limit, cursor=cursor)
            names += [c.title for c in page.items]
            if not (cursor := page.next_cursor):
                return sorted(names)

    assert await found(user_id="u-1") == ["day 0", "day 2", "day 3"]
    assert await found(user_id="u-1", limit=1) == ["day 0", "day 2", "day 3"]
    assert await found(
        created_from=base + timedelta(days=1), created_to=base + timedelta(days=3, hours=1)
    ) == [
        "day 1",
        "day 2",
        "day 3",
    ]
    assert await found(user_id="u-1", created_from=base + timedelta(days=2, microseconds=3)) == [
        "day 2",
        "day 3",
    ]
    assert await found(created_to=base - timedelta(seconds=1)) == []
    first = await store.list_by_caller(ALICE, where=Listing(user_id="u-1"), limit=1)
    with pytest.raises(BadRequest):  # a cursor is bound to its filters
        await store.list_by_caller(ALICE, where=Listing(user_id="u-2"), limit=1, cursor=first.next_cursor)


async def test_title_words_filter_the_callers_listing_case_and_accents_aside_and_page(store):
    titles = ["Café opening hours", "Refund for order 12", "Opening a refund", "Shipping"]
    for title in titles:
        await store.create(conversation(title=title))
    await store.create(conversation(BOB, title="Refund of Bob"))
    await store.create(conversation())  # untitled: never matches

    async def found(*words: str, limit: int = 20) -> list[str]:
        names, cursor = [], None
        while True:
            page = await store.list_by_caller(
                ALICE, where=Listing(title_words=tuple(words)), limit=limit, cursor=cursor
            )
            names += [c.title for c in page.items]
            if not (cursor := page.next_cursor):
                return sorted(names)

    assert await found("refund") == ["Opening a refund", "Refund for order 12"]
    assert await found("refund", limit=1) == ["Opening a refund", "Refund for order 12"]
    assert await found("cafe", "open") == ["Café opening hours"]
    assert await found("fund") == []  # words are matched from their start
    assert await found("xyz") == []


# ------------------------------------------------------------------ feedback


async def test_feedback_on_an_answer_is_shown_replaced_removed_and_listed(store, conv):
    cid = conv.conversation_id
    await answered(store, cid, "question", "answer")
    _, answer = await transcript(store, cid)
    since = utcnow() - timedelta(minutes=1)
    await store.set_feedback(cid, ALICE, answer.message_id, Feedback(rating="down", comment="wrong"))
    await store.set_feedback(cid, ALICE, answer.message_id, Feedback(rating="up", category="helpful"))
    shown = (await transcript(store, cid))[1].feedback
    assert shown is not None and (shown.rating, shown.comment, shown.category) == ("up", None, "helpful")
    listed = (await store.feedback(since=since)).items
    assert [(e.message_id, e.rating, e.caller_id) for e in listed] == [(answer.message_id, "up", ALICE)]
    assert (await store.feedback(since=since, rating="down")).items == []
    await store.set_feedback(cid, ALICE, answer.message_id, None)
    assert (await transcript(store, cid))[1].feedback is None
    assert (await store.feedback(since=since)).items == []


async def test_feedback_only_on_an_assistant_message_of_the_callers_conversation(store, conv):
    cid = conv.conversation_id
    await answered(store, cid, "question", "answer")
    question, answer = await transcript(store, cid)
    with pytest.raises(MessageNotFound):
        await store.set_feedback(cid, ALICE, question.message_id, Feedback(rating="up"))
    with pytest.raises(MessageNotFound):
        await store.set_feedback(cid, ALICE, "01JZZZZZZZZZZZZZZZZZZZZZZZ", Feedback(rating="up"))
    with pytest.raises(ConversationNotFound):
        await store.set_feedback(cid, BOB, answer.message_id, Feedback(rating="up"))
    assert all(m.feedback is None for m in await transcript(store, cid))


async def test_the_feedback_listing_is_newest_first_and_pages(store):
    since = utcnow() - timedelta(minutes=1)
    rated = []
    for n in range(3):
        cid = (await store.create(conversation())).conversation_id
        await answered(store, cid, f"q{n}", f"a{n}")
        answer = (await transcript(store, cid))[1]
        await store.set_feedback(cid, ALICE, answer.message_id, Feedback(rating="up"))
        rated.append(answer.message_id)
    first = await store.feedback(since=since, limit=2)
    rest = await store.feedback(since=since, limit=2, cursor=first.next_cursor)
    assert [e.message_id for e in first.items + rest.items] == rated[::-1]
    assert rest.next_cursor is None


# ------------------------------------------------------------------ versions


async def revise(store, cid: str, message_id: str, answer: str, *, edit: str | None = None):
    """A regenerate (or an edit) that answers: what a revising turn does with it (loop/finish.py)."""
    new = message(cid, edit) if edit is not None else None
    revision = await store.start_revision(Claim(cid, ALICE, LEASE), message_id, new)
    reply = message(cid, answer, Role.ASSISTANT)
    stored = revision.stored([reply], reply.message_id)
    await store.finish_turn(
        cid,
        TurnOutcome(
            stored,
            tool_calls=0,
            tokens=len(answer) + revision.question_tokens(reply.message_id),
            supersede=revision.superseded(reply.message_id),
        ),
    )
    return revision, reply


async def test_regenerate_keeps_earlier_answers_as_versions_in_order(store, conv):
    cid = conv.conversation_id
    await answered(store, cid, "first", "one")
    await turn(store, cid, "second", *tool_round(cid))
    question = (await transcript(store, cid))[-4]
    revision, two = await revise(store, cid, question.message_id, "two")
    assert revision.kind == "regenerate" and revision.question.message_id == question.message_id
    _, three = await revise(store, cid, two.message_id, "three")
    latest = await transcript(store, cid)
    assert [m.content for m in latest] == ["first", "one", "second", "three"]
    every = await transcript(store, cid, all_versions=True)
    assert [m.content for m in every] == [
        "first",
        "one",
        "second",
        "",
        "result",
        "the answer",
        "two",
        "three",
    ]
    assert [m.superseded_by for m in every[3:]] == [two.message_id] * 3 + [three.message_id, None]
    assert (await store.get(cid, ALICE)).message_count == len(latest)
    window = await store.window(cid, 10)
    assert [m.content for m in window] == ["first", "one", "second", "three"]


async def test_edit_replaces_the_question_and_its_answer(store, conv):
    cid = conv.conversation_id
    await answered(store, cid, "typo questoin", "answer")
    old_question, _ = await transcript(store, cid)
    _, reply = await revise(store, cid, old_question.message_id, "better answer", edit="typo question")
    latest = await transcript(store, cid)
    assert [m.content for m in latest] == ["typo question", "better answer"]
    every = await transcript(store, cid, all_versions=True)
    assert [m.superseded_by for m in every] == [latest[0].message_id, reply.message_id, None, None]
    counted = await store.get(cid, ALICE)
    assert counted.message_count == 2
    assert counted.total_tokens == len("typo questoin") + len("answer") + len("typo question") + len(
        "better answer"
    )


async def test_only_the_last_exchange_can_be_revised(store, conv):
    cid = conv.conversation_id
    await answered(store, cid, "first", "one")
    await answered(store, cid, "second", "two")
    first, one, *_ = await transcript(store, cid)
    for earlier in (first, one):
        with pytest.raises(NotLastExchange):
            await store.start_revision(Claim(cid, ALICE, LEASE), earlier.message_id, None)
    with pytest.raises(MessageNotFound):
        await store.start_revision(Claim(cid, ALICE, LEASE), "01JZZZZZZZZZZZZZZZZZZZZZZZ", None)
    last = (await transcript(store, cid))[-1]
    with pytest.raises(ConversationNotFound):
        await store.start_revision(Claim(cid, BOB, LEASE), last.message_id, None)
    # none of the refusals kept the lock; a revision holds it like a turn
    await store.start_revision(Claim(cid, ALICE, LEASE), last.message_id, None)
    with pytest.raises(Conflict):
        await store.start_turn(Claim(cid, ALICE, LEASE), message(cid, "meanwhile"))
    await store.abort_turn(cid)
    assert [m.content for m in await transcript(store, cid)] == ["first", "one", "second", "two"]


async def test_a_revision_without_an_answer_changes_nothing(store, conv):
    cid = conv.conversation_id
    await answered(store, cid, "question", "answer")
    question = (await transcript(store, cid))[0]
    revision = await store.start_revision(
        Claim(cid, ALICE, LEASE), question.message_id, message(cid, "edited")
    )
    assert revision.stored([], None) == [] and revision.superseded(None) == []
    await store.finish_turn(cid, TurnOutcome([], tool_calls=0, tokens=3, supersede=[]))
    assert [m.content for m in await transcript(store, cid, all_versions=True)] == ["question", "answer"]
    assert (await store.get(cid, ALICE)).message_count == 2
    assert PLAIN.stored([question], None) == [question]
