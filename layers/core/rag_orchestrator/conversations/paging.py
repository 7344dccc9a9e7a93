"""Page sizes, and pages of a list held whole (transcripts, the memory store) with offset cursors."""

from __future__ import annotations

from collections.abc import Sequence

from rag_orchestrator.conversations.cursors import CursorCodec
from rag_orchestrator.domain.conversations import Page
from rag_orchestrator.errors import BadRequest

DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 100


def check_limit(limit: int) -> int:
    if not 1 <= limit <= MAX_PAGE_SIZE:
        raise BadRequest(f"limit must be between 1 and {MAX_PAGE_SIZE}")
    return limit


def offset_page[T](
    items: Sequence[T], limit: int, cursor: str | None, codec: CursorCodec, scope: str
) -> Page[T]:
    """A page of `items`: the cursor holds an offset, signed for `scope`."""
    check_limit(limit)
    offset = 0
    if cursor:
        position = codec.decode(cursor, scope).get("offset")
        if not isinstance(position, int) or position < 0:
            raise BadRequest("Invalid cursor")
        offset = position
    end = offset + limit
    following = codec.encode({"offset": end}, scope) if end < len(items) else None
    return Page(items=list(items[offset:end]), next_cursor=following)
