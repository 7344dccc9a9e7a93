"""When a turn must end: the Lambda context (REST, Mangum), the Web Adapter's header (streaming), else the default budget."""

from __future__ import annotations

import json
import time

import pytest
from starlette.requests import Request

from devserver.invoke import LambdaContext
from rag_orchestrator.api.deadlines import turn_deadline
from rag_orchestrator.config import load_settings

SETTINGS = load_settings(
    conversation_storage="memory", turn_deadline_margin_seconds=3, turn_default_budget_seconds=120
)


def request(headers: dict[str, str] | None = None, **scope: object) -> Request:
    raw = [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    return Request({"type": "http", "method": "POST", "path": "/", "headers": raw, **scope})


def test_mangums_lambda_context_gives_the_remaining_time_less_the_margin():
    context = LambdaContext(function_name="api", timeout_seconds=29)
    deadline = turn_deadline(request(**{"aws.context": context}), SETTINGS)
    assert time.time() + 29 - 3 - 1 < deadline <= time.time() + 29 - 3


def test_the_web_adapters_header_gives_the_invocation_deadline_less_the_margin():
    ends = time.time() + 300
    header = {
        "request_id": "r",
        "deadline": int(ends * 1000),
        "invoked_function_arn": "arn",
        "env_config": {},
    }
    deadline = turn_deadline(request({"x-amzn-lambda-context": json.dumps(header)}), SETTINGS)
    assert deadline == pytest.approx(ends - 3, abs=0.01)


@pytest.mark.parametrize(
    "value",
    ["not json", "{}", '{"deadline": "soon"}', "[1]", '{"deadline": NaN}', '{"deadline": -Infinity}'],
)
def test_a_header_without_a_deadline_falls_back_to_the_default_budget(value):
    deadline = turn_deadline(request({"x-amzn-lambda-context": value}), SETTINGS)
    assert deadline == pytest.approx(time.time() + 120, abs=1)


def test_no_lambda_at_all_gives_the_default_budget_and_a_far_header_is_capped_at_lambdas_limit():
    assert turn_deadline(request(), SETTINGS) == pytest.approx(time.time() + 120, abs=1)
    far = {"deadline": int((time.time() + 10_000) * 1000)}
    capped = turn_deadline(request({"x-amzn-lambda-context": json.dumps(far)}), SETTINGS)
    assert capped == pytest.approx(time.time() + 900 - 3, abs=1)
