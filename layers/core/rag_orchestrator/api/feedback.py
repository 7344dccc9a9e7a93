"""Feedback on answers (docs/conversations.md): the owner rates an assistant message of their
conversation (PUT again replaces, DELETE removes); admins list every rating, newest first.

Each rating counts in the FeedbackUp or FeedbackDown metric (EMF, flushed after the response).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from fastapi import APIRouter, Depends, Query, Response

from rag_orchestrator.api.auth import get_owner, require_roles
from rag_orchestrator.api.conversations import CURSOR, LIMIT
from rag_orchestrator.api.deps import get_store
from rag_orchestrator.api.id_params import conversation_id, message_id
from rag_orchestrator.conversations.store import FeedbackStore
from rag_orchestrator.domain.base import utcnow
from rag_orchestrator.domain.callers import ADMIN, Caller
from rag_orchestrator.domain.conversations import Page
from rag_orchestrator.domain.feedback import Feedback, FeedbackEntry, FeedbackRequest, Rating
from rag_orchestrator.errors import BadRequest
from rag_orchestrator.observability import metrics

router = APIRouter(tags=["feedback"])
FEEDBACK_PATH = "/api/v1/chat/conversations/{conversation_id}/messages/{message_id}/feedback"
DEFAULT_SINCE = timedelta(days=7)
OLDEST_SINCE = timedelta(days=92)  # the listing walks one day partition after another


@router.put(FEEDBACK_PATH, response_model=Feedback, summary="Rate an answer (again: replaces the rating)")
async def put_feedback(
    body: FeedbackRequest,
    conversation_id: str = Depends(conversation_id),
    message_id: str = Depends(message_id),
    caller: Caller = Depends(get_owner),
    store: FeedbackStore = Depends(get_store),
) -> Feedback:
    feedback = Feedback.of(body)
    await store.set_feedback(conversation_id, caller.caller_id, message_id, feedback)
    if feedback.rating == "up":
        metrics.add_metric(name="FeedbackUp", unit="Count", value=1)
    else:
        metrics.add_metric(name="FeedbackDown", unit="Count", value=1)
    return feedback


@router.delete(FEEDBACK_PATH, status_code=204, response_class=Response, summary="Remove a rating")
async def delete_feedback(
    conversation_id: str = Depends(conversation_id),
    message_id: str = Depends(message_id),
    caller: Caller = Depends(get_owner),
    store: FeedbackStore = Depends(get_store),
) -> Response:
    await store.set_feedback(conversation_id, caller.caller_id, message_id, None)
    return Response(status_code=204)


@router.get(
    "/api/v1/admin/feedback", response_model=Page[FeedbackEntry], summary="Every rating, newest first"
)
async def list_feedback(
    since: datetime | None = Query(None, description="ISO 8601; default: 7 days ago; at most 92 days ago"),
    rating: Rating | None = Query(None),
    limit: int = LIMIT,
    cursor: str | None = CURSOR,
    caller: Caller = Depends(require_roles(lambda settings: (ADMIN,))),
    store: FeedbackStore = Depends(get_store),
) -> Page[FeedbackEntry]:
    now = utcnow()
    start = since or now - DEFAULT_SINCE
    if start.tzinfo is None:
        raise BadRequest("since needs a time zone (e.g. 2026-11-23T00:00:00Z)")
    if start < now - OLDEST_SINCE:
        raise BadRequest(f"since must be within the last {OLDEST_SINCE.days} days")
    return await store.feedback(since=start, rating=rating, limit=limit, cursor=cursor)
