"""Feedback on an answer (a rating, with an optional comment and category), as given and as stored."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from rag_orchestrator.domain.base import CamelModel, utcnow
from rag_orchestrator.domain.text import ClientBody

Rating = Literal["up", "down"]
MAX_COMMENT_CHARS = 2000
MAX_CATEGORY_CHARS = 64


class FeedbackRequest(ClientBody):
    model_config = ClientBody.model_config | {"extra": "forbid"}

    rating: Rating
    comment: str | None = Field(None, max_length=MAX_COMMENT_CHARS)
    category: str | None = Field(None, min_length=1, max_length=MAX_CATEGORY_CHARS)


class Feedback(CamelModel):
    """What a message carries once rated."""

    rating: Rating
    comment: str | None = None
    category: str | None = None
    updated_at: datetime = Field(default_factory=utcnow)

    @classmethod
    def of(cls, request: FeedbackRequest) -> Feedback:
        return cls(rating=request.rating, comment=request.comment, category=request.category)


class FeedbackEntry(CamelModel):
    """One rating as the admin listing shows it: where it was given, by whom, and what it says."""

    conversation_id: str
    message_id: str
    caller_id: str
    rating: Rating
    comment: str | None = None
    category: str | None = None
    updated_at: datetime
