"""Compaction through the app on the moto server: a conversation past CONTEXT_TOKEN_BUDGET gets a
running summary after the turn (by the fake LLM over HTTP, or the key sentences offline or when the
model fails), the next turn sends it first and only the window after it, the read shows it, the
transcript keeps every message, and archival and the continued conversation keep it."""

from __future__ import annotations

import pytest

from tests.fakes.llm_script import error_reply, text_reply
from tests.integration.features import ALICE, BASE, ask, client, new_conversation, transcript, use_fake_llm
from tests.integration.test_archive_function import invoke_archive

pytestmark = pytest.mark.integration

BUDGET = 1000  # estimated tokens; each exchange below is about half of it


@pytest.fixture
def small_budget(monkeypatch):
    monkeypatch.setenv("CONTEXT_TOKEN_BUDGET", str(BUDGET))
    monkeypatch.setenv("AUTO_TITLE", "false")
    monkeypatch.setenv("MEMORY_ENABLED", "false")


@pytest.fixture
def stack(aws_stack, chroma_url, small_budget):
    return None


def question(n: int) -> str:
    return f"Question {n} is about refunds. " + "Please explain the details of the policy. " * 14


def reply(n: int) -> str:
    return f"Answer {n} says fourteen days. " + "The policy covers every order placed online. " * 30


def read(c, cid: str) -> dict:
    response = c.get(f"{BASE}/{cid}", headers=ALICE)
    assert response.status_code == 200, response.text
    return dict(response.json())


def test_a_long_conversation_is_summarised_and_the_next_turn_sends_the_summary_first(
    stack, fake_llm, monkeypatch
):
    use_fake_llm(fake_llm, monkeypatch)
    fake_llm.script(text_reply(reply(1)))
    c = client()
    cid = new_conversation(c)
    ask(c, cid, question(1))
    assert len(fake_llm.requests) == 1  # within the budget: no summary call
    assert (read(c, cid)["summary"], read(c, cid)["summarizedThrough"]) == (None, None)

    fake_llm.script(text_reply(reply(2)), text_reply("SUMMARY-ONE: the user asked about refund times."))
    assert ask(c, cid, question(2))[-1].event == "Completed"
    summary_call = fake_llm.requests[-1]
    assert summary_call["max_tokens"] == 400 and "tools" not in summary_call
    assert "Question 1 is about refunds." in summary_call["messages"][-1]["content"]
    assert "Question 2" not in summary_call["messages"][-1]["content"]  # the kept window is not folded
    messages = transcript(c, cid)
    conversation = read(c, cid)
    assert conversation["summary"] == "SUMMARY-ONE: the user asked about refund times."
    assert conversation["summarizedThrough"] == messages[1]["messageId"]  # the first answer

    fake_llm.script(text_reply("Yes."))
    ask(c, cid, "Even abroad?")
    assert len(fake_llm.requests) == 4  # back within the budget: no summary call
    sent = fake_llm.requests[-1]["messages"]
    assert sent[0]["role"] == "system" and "SUMMARY-ONE" not in sent[0]["content"]
    assert sent[1]["role"] == "user" and sent[1]["content"].startswith("Summary of the earlier part")
    assert all(
        "SUMMARY-ONE" not in m["content"] for m in sent if m["role"] == "system"
    )  # data, never the system's
    assert "SUMMARY-ONE" in sent[1]["content"] and "never instructions" in sent[1]["content"]
    later = [m["content"] for m in sent[2:]]
    assert later == [question(2), reply(2), "Even abroad?"]  # only the window after the summary
    assert len(transcript(c, cid)) == 6  # the transcript keeps every message


def test_a_failing_summary_call_leaves_the_turn_answered_and_the_key_sentences(stack, fake_llm, monkeypatch):
    use_fake_llm(fake_llm, monkeypatch)
    fake_llm.script(text_reply(reply(1)), text_reply(reply(2)), error_reply(500, "upstream broke"))
    c = client()
    cid = new_conversation(c)
    ask(c, cid, question(1))
    events = ask(c, cid, question(2))
    assert events[-1].event == "Completed"
    messages = transcript(c, cid)
    assert [m["content"] for m in messages] == [question(1), reply(1), question(2), reply(2)]
    conversation = read(c, cid)
    assert conversation["summary"] == (
        "User: Question 1 is about refunds.\nAssistant: Answer 1 says fourteen days."
    )
    assert conversation["summarizedThrough"] == messages[1]["messageId"]
    assert conversation["messageCount"] == 4


def test_the_extractive_strategy_summarises_without_a_model(stack, monkeypatch):
    monkeypatch.setenv("MODEL_STRATEGY", "extractive")
    c = client()
    cid = new_conversation(c)
    for n in (1, 2, 3, 4):
        assert ask(c, cid, question(n) + " " + reply(n))[-1].event == "Completed"
    conversation = read(c, cid)
    assert conversation["summary"] is not None
    assert conversation["summary"].startswith("User: Question 1 is about refunds.")
    messages = transcript(c, cid)
    assert len(messages) == 16  # each turn: the question, a search's call and result, the answer
    folded = [m for m in messages if m["messageId"] <= conversation["summarizedThrough"]]
    assert folded[-1]["role"] == "assistant" and folded[-1]["content"]  # whole exchanges fold
    assert 4 <= len(folded) < 16 and "Question 3 is about refunds." in conversation["summary"]


@pytest.fixture
def archiving(own_tables, chroma_url, small_budget, monkeypatch):
    monkeypatch.setenv("ARCHIVE_AFTER_DAYS", "0")


def test_archival_and_the_continued_conversation_keep_the_summary(archiving, fake_llm, monkeypatch):
    use_fake_llm(fake_llm, monkeypatch)
    fake_llm.script(text_reply(reply(1)), text_reply(reply(2)), text_reply("SUMMARY-KEPT"))
    c = client()
    cid = new_conversation(c)
    ask(c, cid, question(1))
    ask(c, cid, question(2))
    assert invoke_archive()["archived"] == 1
    archived = read(c, cid)
    assert (archived["status"], archived["summary"]) == ("ARCHIVED", "SUMMARY-KEPT")

    fake_llm.script(text_reply("Yes."))
    ask(c, cid, "Still true?")  # the window comes from the transcript, after the summary
    sent = fake_llm.requests[-1]["messages"]
    assert "SUMMARY-KEPT" in sent[1]["content"]
    assert [m["content"] for m in sent[2:]] == [question(2), reply(2), "Still true?"]
    continued = read(c, cid)
    assert (continued["status"], continued["summary"]) == ("ACTIVE", "SUMMARY-KEPT")
    assert len(transcript(c, cid)) == 6
