"""The loop's decision after each model call (loop/steps.py): a typed next step, never a flag."""

import pytest

from rag_orchestrator.loop.steps import FinalAnswer, HoldForApproval, ModelOutput, RunTools, next_step
from tests.fakes.scripted import call

CALLS = (call("rag_search", '{"query": "q"}'),)


def test_calls_with_tools_offered_run_the_tools_with_what_the_model_said():
    step = next_step(
        ModelOutput("Looking.", "why", CALLS), tools_offered=True, last_call=False, after_tools=False
    )
    assert step == RunTools(CALLS, "Looking.", "why")


@pytest.mark.parametrize(
    ("last_call", "after_tools", "reason"),
    [(False, False, "stop"), (True, False, "stop"), (True, True, "max_iterations")],
)
def test_calls_without_tools_offered_keep_the_words_and_drop_the_calls(last_call, after_tools, reason):
    step = next_step(
        ModelOutput("Partial words.", None, CALLS),
        tools_offered=False,
        last_call=last_call,
        after_tools=after_tools,
    )
    assert step == FinalAnswer("Partial words.", None, reason)


def test_an_answer_ends_the_turn_and_an_empty_one_too():
    assert next_step(
        ModelOutput("Done.", "r"), tools_offered=True, last_call=False, after_tools=True
    ) == FinalAnswer("Done.", "r", "stop")
    assert next_step(ModelOutput(), tools_offered=True, last_call=False, after_tools=False) == FinalAnswer("")


def test_a_call_that_needs_approval_is_held_the_others_run_and_further_approval_calls_are_refused():
    look, cancel, refund = call("lookup", "{}", "c1"), call("cancel", "{}", "c2"), call("refund", "{}", "c3")
    step = next_step(
        ModelOutput("On it.", None, (cancel, look, refund)),
        tools_offered=True,
        last_call=False,
        after_tools=False,
        needs_approval=lambda c: c.function.name in ("cancel", "refund"),
    )
    assert step == HoldForApproval((cancel, look, refund), cancel, (look,), (refund,), "On it.")
    assert next_step(
        ModelOutput("", None, (look,)),
        tools_offered=True,
        last_call=False,
        after_tools=False,
        needs_approval=lambda c: c.function.name == "cancel",
    ) == RunTools((look,))
