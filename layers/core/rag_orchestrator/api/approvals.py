"""The decision on a held tool call (docs/approvals.md), streamed as the turn that continues with it.

404, 409 and 429 are plain HTTP errors, before the stream starts: an unknown approval, another
caller's, or one in a conversation the caller cannot see is 404; one already decided, or expired, 409.
"""

from __future__ import annotations

import time
from typing import Literal

from pydantic import Field
from starlette.requests import Request
from starlette.responses import StreamingResponse

from rag_orchestrator.api.auth import get_owner
from rag_orchestrator.api.chat import CONVERSATION_ID, stream_turn
from rag_orchestrator.api.deadlines import turn_deadline
from rag_orchestrator.api.deps import get_orchestrator, get_settings
from rag_orchestrator.api.routing import Depends, Path, Router
from rag_orchestrator.config import Settings
from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.domain.text import ClientBody
from rag_orchestrator.loop.orchestrator import Orchestrator
from rag_orchestrator.loop.request import TurnRequest
from rag_orchestrator.providers.events import StreamingMode

APPROVAL_ID = Path(..., min_length=1, max_length=64)

stream_router = Router(prefix="/api/v1/chat/conversations", tags=["chat"])


class DecisionRequest(ClientBody):
    model_config = ClientBody.model_config | {"extra": "forbid"}

    decision: Literal["approve", "deny"]
    reason: str | None = Field(None, max_length=2000)  # the model reads it with a denial


@stream_router.post(
    "/{conversation_id}/approvals/{approval_id}",
    summary="Approve or deny a held tool call; the turn continues as server-sent events",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def decide(
    body: DecisionRequest,
    request: Request,
    conversation_id: str = CONVERSATION_ID,
    approval_id: str = APPROVAL_ID,
    caller: Caller = Depends(get_owner),
    orchestrator: Orchestrator = Depends(get_orchestrator),
    settings: Settings = Depends(get_settings),
) -> StreamingResponse:
    started = time.perf_counter()
    asked = decision_request(request, conversation_id, caller, settings)
    reason = (body.reason or "").strip() or None
    turn = await orchestrator.decide(asked, approval_id, body.decision, reason)
    return stream_turn(turn, request, started)


def decision_request(
    request: Request, conversation_id: str, caller: Caller, settings: Settings
) -> TurnRequest:
    """The request of the turn that continues after a decision: it has no message of its own."""
    return TurnRequest(
        request_id=getattr(request.state, "request_id", None),
        client_request_id=getattr(request.state, "client_request_id", None),
        conversation_id=conversation_id,
        caller=caller,
        message="",
        mode=StreamingMode.PROGRESSIVE,
        deadline=turn_deadline(request, settings),
    )
