"""Our stream events as AI SDK UI message stream parts: steps, text, tools, previews, sources, the end,
approvals as the SDK's own parts, and the turn that continues after a decision."""

from __future__ import annotations

import json

from rag_orchestrator.api.ui_parts import DONE, UIParts, encode_part, source_part
from rag_orchestrator.domain import events as ev
from rag_orchestrator.domain.passages import SourceWithSnippet

CID = "c-1"
SOURCE = {
    "documentId": "guide",
    "title": "Guide",
    "chunkIndex": 0,
    "score": 0.8,
    "source": "docs",
    "tags": ["dev"],
    "snippet": "make test",
}


def translate(*events: ev.StreamEvent, **options: str) -> list[dict]:
    translation = UIParts(CID, "T1", **options)
    out = translation.start()
    for event in events:
        out += translation.parts(event)
    return out


def types(parts: list[dict]) -> list[str]:
    return [p["type"] for p in parts]


def test_a_tool_turn_is_two_steps_with_text_tools_sources_and_finish():
    parts = translate(
        ev.StatusUpdate(conversation_id=CID, status="Searching the knowledge base"),
        ev.ResponseChunk(conversation_id=CID, content="Let me look. "),
        ev.ToolCallStart(
            conversation_id=CID, tool_name="rag_search", tool_call_id="t1", arguments={"q": "x"}
        ),
        ev.ToolCallResult(
            conversation_id=CID, tool_name="rag_search", tool_call_id="t1", result="{}", success=True
        ),
        ev.ResponseChunk(conversation_id=CID, content="Run "),
        ev.ResponseChunk(conversation_id=CID, content="make test."),
        ev.Sources(conversation_id=CID, sources=[SOURCE]),
        ev.Completed(conversation_id=CID, iterations_used=2, tokens_used=40, message_id="m-9"),
    )
    assert types(parts) == [
        "start",
        "start-step",
        "data-status",
        "text-start",
        "text-delta",
        "text-end",
        "tool-input-available",
        "tool-output-available",
        "finish-step",
        "start-step",
        "text-start",
        "text-delta",
        "text-delta",
        "text-end",
        "source-document",
        "finish-step",
        "finish",
    ]
    assert parts[0] == {"type": "start", "messageMetadata": {"conversationId": CID, "turnId": "T1"}}
    assert parts[2] == {
        "type": "data-status",
        "data": {"status": "Searching the knowledge base"},
        "transient": True,
    }
    first, second = parts[3]["id"], parts[10]["id"]
    assert first != second and parts[4]["id"] == parts[5]["id"] == first
    assert parts[6] == {
        "type": "tool-input-available",
        "toolCallId": "t1",
        "toolName": "rag_search",
        "input": {"q": "x"},
        "providerExecuted": True,
        "dynamic": True,
    }
    assert parts[7] == {"type": "tool-output-available", "toolCallId": "t1", "output": "{}"}
    assert "".join(p["delta"] for p in parts if p["type"] == "text-delta") == "Let me look. Run make test."
    assert parts[-1] == {
        "type": "finish",
        "finishReason": "stop",
        "messageMetadata": {
            "conversationId": CID,
            "turnId": "T1",
            "messageId": "m-9",
            "iterationsUsed": 2,
            "tokensUsed": 40,
            "usage": {"totalTokens": 40},
            "finishReason": "stop",
        },
    }


def test_the_ui_message_id_is_the_turns_when_given():
    assert translate(message_id="T1")[0] == {
        "type": "start",
        "messageId": "T1",
        "messageMetadata": {"conversationId": CID, "turnId": "T1"},
    }


def held(call_id: str = "c1") -> ev.ApprovalRequested:
    return ev.ApprovalRequested(
        conversation_id=CID,
        approval_id="A1",
        tool_name="cancel_order",
        tool_call_id=call_id,
        arguments={"orderId": "A-1002"},
        expires_at="2030-01-01T00:00:00Z",
    )


def completed(reason: ev.FinishReason = "stop") -> ev.Completed:
    return ev.Completed(conversation_id=CID, iterations_used=1, tokens_used=9, finish_reason=reason)


def test_a_held_call_is_the_sdks_approval_request_and_the_turn_finishes_for_tool_calls():
    parts = translate(held(), completed("awaiting_approval"))
    assert types(parts) == [
        "start",
        "start-step",
        "tool-input-available",
        "tool-approval-request",
        "finish-step",
        "finish",
    ]
    assert parts[2]["input"] == {"orderId": "A-1002"} and parts[2]["toolName"] == "cancel_order"
    assert parts[3] == {"type": "tool-approval-request", "approvalId": "A1", "toolCallId": "c1"}
    assert parts[-1]["finishReason"] == "tool-calls"
    assert parts[-1]["messageMetadata"]["finishReason"] == "awaiting_approval"


def test_the_continuation_puts_the_outcome_on_the_clients_part_then_opens_its_step():
    approved = translate(
        ev.ToolCallStart(
            conversation_id=CID, tool_name="cancel_order", tool_call_id="c1", arguments={"orderId": "A"}
        ),
        ev.ToolCallResult(
            conversation_id=CID, tool_name="cancel_order", tool_call_id="c1", result="done", success=True
        ),
        ev.ResponseChunk(conversation_id=CID, content="Cancelled."),
        completed(),
        continues="c1",
    )
    assert types(approved) == [
        "start",
        "tool-output-available",
        "start-step",
        "text-start",
        "text-delta",
        "text-end",
        "finish-step",
        "finish",
    ]
    assert "messageId" not in approved[0]  # the client goes on with its own message
    denied = translate(
        ev.ToolCallResult(
            conversation_id=CID, tool_name="cancel_order", tool_call_id="c1", result="Not run", success=False
        ),
        ev.ResponseChunk(conversation_id=CID, content="I left it."),
        completed(),
        continues="c1",
    )
    assert types(denied)[:3] == ["start", "tool-output-denied", "start-step"]
    assert denied[1] == {"type": "tool-output-denied", "toolCallId": "c1"}


def test_a_replayed_refusal_makes_its_part_first():
    parts = translate(
        ev.ToolCallResult(
            conversation_id=CID, tool_name="cancel_order", tool_call_id="c1", result="Not run", success=False
        ),
        completed(),
        message_id="T1",
    )
    assert types(parts) == [
        "start",
        "start-step",
        "tool-input-available",
        "tool-output-denied",
        "finish-step",
        "finish",
    ]
    assert "input" not in parts[2] and parts[2]["toolName"] == "cancel_order"


def test_finish_reasons_both_majors_accept():
    for native, sdk in [
        ("stop", "stop"),
        ("cancelled", "other"),
        ("deadline", "other"),
        ("max_iterations", "other"),
    ]:
        finish = translate(completed(native))[-1]
        assert (finish["finishReason"], finish["messageMetadata"]["finishReason"]) == (sdk, native)


def test_parallel_tool_calls_failures_and_previews_stay_in_one_step():
    parts = translate(
        ev.ToolCallStart(conversation_id=CID, tool_name="a", tool_call_id="1", arguments={}),
        ev.ToolCallStart(conversation_id=CID, tool_name="b", tool_call_id="2", arguments={}),
        ev.Preview(conversation_id=CID, preview_type="workflow_preview", payload={"steps": ["x"]}),
        ev.ToolCallResult(conversation_id=CID, tool_name="a", tool_call_id="1", result="ok", success=True),
        ev.ToolCallResult(
            conversation_id=CID, tool_name="b", tool_call_id="2", result="HTTP 500", success=False
        ),
        ev.Completed(conversation_id=CID, iterations_used=1, tokens_used=0),
    )
    assert types(parts) == [
        "start",
        "start-step",
        "tool-input-available",
        "tool-input-available",
        "data-preview",
        "tool-output-available",
        "tool-output-error",
        "finish-step",
        "finish",
    ]
    assert parts[4]["data"] == {"previewType": "workflow_preview", "payload": {"steps": ["x"]}}
    assert parts[6] == {"type": "tool-output-error", "toolCallId": "2", "errorText": "HTTP 500"}


def test_an_error_closes_the_open_text_and_step_then_finishes():
    parts = translate(
        ev.ResponseChunk(conversation_id=CID, content="Half"),
        ev.Error(conversation_id=CID, error="Model provider error"),
    )
    assert types(parts) == [
        "start",
        "start-step",
        "text-start",
        "text-delta",
        "text-end",
        "finish-step",
        "error",
        "finish",
    ]
    assert parts[-2] == {"type": "error", "errorText": "Model provider error"}
    assert parts[-1] == {"type": "finish", "finishReason": "error"}


def test_empty_chunks_send_nothing_and_status_details_are_kept():
    translation = UIParts(CID, "T1")
    translation.start()
    assert translation.parts(ev.ResponseChunk(conversation_id=CID, content="")) == []
    status = translation.parts(
        ev.StatusUpdate(conversation_id=CID, status="Iteration limit reached", details="d")
    )
    assert status[0]["data"] == {"status": "Iteration limit reached", "details": "d"}


def test_source_part_cites_the_answer_key_and_keeps_the_passage():
    part = source_part(SourceWithSnippet.model_validate(SOURCE))
    assert part["sourceId"] == "guide#0"  # the answer cites [source:guide#0]
    assert (part["title"], part["filename"], part["mediaType"]) == ("Guide", "guide", "text/plain")
    assert part["providerMetadata"] == {"ragOrchestrator": SOURCE}
    untitled = SourceWithSnippet(document_id="d", title="", chunk_index=2, score=0.5, snippet="x")
    assert source_part(untitled)["title"] == "d"


def test_encoding_is_one_unnamed_sse_message_per_part():
    encoded = encode_part({"type": "text-delta", "id": "text-1", "delta": "é\n"})
    assert encoded.startswith(b"data: ") and encoded.endswith(b"\n\n") and encoded.count(b"\n") == 2
    assert json.loads(encoded[6:]) == {"type": "text-delta", "id": "text-1", "delta": "é\n"}
    assert DONE == b"data: [DONE]\n\n"
