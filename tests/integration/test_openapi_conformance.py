"""The OpenAPI document against the running app, with schemathesis: every response to the requests it
generates from /openapi.json — valid and invalid ones — has a status the document declares for its
route, a declared content type, and a body that validates against the declared schema (each SSE
message of a stream too). No 5xx for any of them.

The app serves every router over DynamoDB and S3 on the moto server, a real Chroma server holding a
small guide, and the fake LLM answering every turn. A path's conversation id is, in most examples, a
conversation of the caller, so turns run; the rest are random ids (404). Bounded: a few examples per
operation, derandomized, so a run is the same every time.
"""

from __future__ import annotations

import json
import uuid

import httpx
import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from rag_orchestrator.api.app import ALL_ROUTERS, create_app
from tests.fakes.llm_script import text_reply

pytestmark = pytest.mark.integration

CALLER = {"X-Caller-Id": "conformance", "X-Caller-Roles": "admin"}
GUIDE = "The suite runs with make test on a fresh machine. The dev server listens on port 8000."
EXAMPLES = 4  # per operation, mode and kind of path
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


@pytest.fixture
def served(aws_stack, chroma_url, fake_llm, monkeypatch):
    from rag_orchestrator.config import get_settings
    from tests.integration.knowledge import ingest

    monkeypatch.setenv("CHROMA_COLLECTION", f"conformance-{uuid.uuid4().hex[:8]}")
    monkeypatch.setenv("RAG_SIMILARITY_THRESHOLD", "0.05")
    for key, value in fake_llm.settings_for("openai_compatible", model_max_retries=0).items():
        monkeypatch.setenv(key.upper(), str(value))
    fake_llm.default = text_reply("Run the suite with make test [source:guide#0].", chunks=2)
    get_settings.cache_clear()
    ingest([{"documentId": "guide", "title": "Guide", "text": GUIDE}], get_settings())
    return create_app(ALL_ROUTERS)


def new_conversation(app) -> str:
    with TestClient(app) as client:
        response = client.post("/api/v1/chat/conversations", json={}, headers=CALLER)
    assert response.status_code == 201, response.text
    return response.json()["conversationId"]


def owned_path(app, operation) -> dict[str, str]:
    """A conversation of the caller's and, for a turn's or a message's routes, a turn it streamed
    (finished by now): its id, and its answer's (the last exchange, which regenerate and edit take)."""
    path = {"conversation_id": new_conversation(app)}
    names = {p.name for p in operation.path_parameters}
    if names & {"turn_id", "message_id"}:
        with TestClient(app) as client:
            url = f"/api/v1/chat/conversations/{path['conversation_id']}/messages/stream"
            response = client.post(url, json={"message": "How do I run the tests?"}, headers=CALLER)
        assert response.status_code == 200, response.text
        events = [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]
        path["turn_id"], path["message_id"] = events[0]["turnId"], events[-1]["messageId"]
    return {name: value for name, value in path.items() if name in names | {"conversation_id"}}


def exercise(strategy, authenticate: bool, seen: dict[str, list[int]]) -> None:
    """Send what `strategy` generates; a failed check raises with the request that shows it."""

    @given(case=strategy)
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    def send(case) -> None:
        headers = dict(case.headers or {})
        if authenticate and not {"x-caller-id", "authorization"} & {h.lower() for h in headers}:
            headers.update(CALLER)
        response = case.call_and_validate(headers=headers, checks=CHECKS)
        seen.setdefault(case.operation.label, []).append(response.status_code)

    send()


def test_every_response_is_declared_and_matches_its_schema(served):
    schema = schemathesis.openapi.from_asgi("/openapi.json", served)
    failures, seen = [], {}
    operations = [result.ok() for result in schema.get_all_operations()]
    for operation in operations:
        owned = "conversation_id" in {p.name for p in operation.path_parameters}
        modes = [GenerationMode.POSITIVE]
        if operation.path_parameters or operation.query or operation.body:  # something to get wrong
            modes.append(GenerationMode.NEGATIVE)
        for mode in modes:
            runs = [(operation.as_strategy(mode), True)]
            if owned:  # a conversation of the caller's: turns run, attachments are made, turns replay
                path = owned_path(served, operation)
                runs.append((operation.as_strategy(mode, path_parameters=path, headers=CALLER), False))
            if mode == GenerationMode.POSITIVE:  # the document's own examples, as /docs sends them
                path = owned_path(served, operation) if owned else {}
                examples = schema.get_strategies_from_examples(
                    operation, path_parameters=path, headers=CALLER
                )
                runs += [(example, False) for example in examples]
            for strategy, authenticate in runs:
                try:
                    exercise(strategy, authenticate, seen)
                except Exception as exc:  # every operation runs; all failures are reported together
                    failures.append(f"{operation.label} ({mode.value}): {exc}")
    assert not failures, "\n\n".join(failures)
    # Not refusals alone: each stream answered 200 at least once, so its SSE messages were validated.
    # A decision needs a held tool call, which this app's catalogue has none of: test_approvals.py
    # streams decisions, and their events are the same schemas as every other turn's. Resuming a
    # useChat stream needs a turn still running, so here it answers 204: test_ui_stream.py resumes
    # one, and its parts are the POST's.
    resume = "GET /api/v1/chat/conversations/{conversation_id}/ui-stream"
    streams = [
        o.label
        for o in operations
        if "text/event-stream" in str(o.definition.raw["responses"])
        and "/approvals/" not in o.label
        and o.label != resume
    ]
    assert len(streams) == 7 and all(200 in seen[label] for label in streams), seen
    assert 204 in seen[resume]


def test_the_document_is_served(served):
    with TestClient(served) as client:
        assert client.get("/openapi.json").status_code == httpx.codes.OK
