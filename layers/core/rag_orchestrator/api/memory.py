"""What the service remembers of the caller (docs/memory.md): list it, newest first or best match for
`q`; forget one fragment (204) or all of them (202).

Only the caller's own turn fragments (`said`, `answered`) are listed and forgotten: another caller's
fragment id answers 404, exactly like an unknown one. An attachment's segments belong to its
conversation and go with it. The routes work with MEMORY_ENABLED=false too: what was remembered
before can still be seen and forgotten.
"""

from __future__ import annotations

import asyncio
import re

from fastapi import APIRouter, Depends, Path, Query, Request, Response

from rag_orchestrator.api.auth import get_owner
from rag_orchestrator.api.conversations import CURSOR, LIMIT
from rag_orchestrator.api.deps import services
from rag_orchestrator.conversations.cursors import CursorCodec, cursor_key
from rag_orchestrator.conversations.paging import offset_page
from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.domain.conversations import Page
from rag_orchestrator.domain.memory import MemoryFragment
from rag_orchestrator.errors import BadRequest, NotFound
from rag_orchestrator.retrieval.fragments import FragmentIndex
from rag_orchestrator.retrieval.query_vector import MAX_QUERY_CHARS, QueryVector, query_text

router = APIRouter(prefix="/api/v1/memory", tags=["memory"])
MAX_MATCHES = 200  # a search lists at most this many best matches, page after page
_FRAGMENT_ID = re.compile(r"(said|answered)-[0-9A-HJKMNP-TV-Z]{26}")


class FragmentNotFound(NotFound):
    error = "Fragment not found"

    def __init__(self, fragment_id: str) -> None:
        super().__init__(f"Fragment not found: {fragment_id}")


def memory_index(request: Request) -> FragmentIndex:
    """The memory collection, whether or not new turns are remembered (MEMORY_ENABLED)."""
    return services(request).fragment_index


def fragment_id(fragment_id: str = Path(..., max_length=100)) -> str:
    """A well-formed fragment id, else the same 404 as for an unknown one."""
    if not _FRAGMENT_ID.fullmatch(fragment_id):
        raise FragmentNotFound(fragment_id)
    return fragment_id


@router.get("", response_model=Page[MemoryFragment], summary="What is remembered of the caller")
async def list_memory(
    request: Request,
    q: str | None = Query(
        None, min_length=1, max_length=MAX_QUERY_CHARS, description="Best matches for these words first"
    ),
    limit: int = LIMIT,
    cursor: str | None = CURSOR,
    caller: Caller = Depends(get_owner),
    index: FragmentIndex = Depends(memory_index),
) -> Page[MemoryFragment]:
    """Newest first; with `q`, best match first."""
    if q is None:
        found = await asyncio.to_thread(index.remembered, caller.caller_id)
    else:
        text = query_text(q)
        if not text:
            raise BadRequest("q must not be empty")
        vector = await QueryVector(services(request).embedder, text).get()
        found = await asyncio.to_thread(index.remembered, caller.caller_id, vector, MAX_MATCHES)
    codec = CursorCodec(cursor_key(services(request).settings))
    page = offset_page(found, limit, cursor, codec, f"memory/{caller.caller_id}/{q or ''}")
    return page


@router.delete("/{fragment_id}", status_code=204, response_class=Response, summary="Forget one fragment")
async def forget_fragment(
    fragment: str = Depends(fragment_id),
    caller: Caller = Depends(get_owner),
    index: FragmentIndex = Depends(memory_index),
) -> Response:
    if not await asyncio.to_thread(index.forget, caller.caller_id, fragment):
        raise FragmentNotFound(fragment)
    return Response(status_code=204)


@router.delete("", status_code=202, response_class=Response, summary="Forget everything remembered")
async def forget_all(
    caller: Caller = Depends(get_owner),
    index: FragmentIndex = Depends(memory_index),
) -> Response:
    """One delete of every turn fragment of the caller's; a turn finishing meanwhile may add its own after."""
    await asyncio.to_thread(index.forget_caller, caller.caller_id)
    return Response(status_code=202)
