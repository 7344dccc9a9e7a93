"""POST /api/v1/query/answer and /api/v1/query/answer/stream: generative answers with citations (docs/answers.md).

Both build on `retrieval.answers.Answerer.events`, so a streamed and a whole answer cannot disagree: the
stream's `done` event carries exactly the object the REST route returns.

Where `stream` may go (the REST function runs under Mangum, which cannot stream):

    route                                   function     stream: true                    stream: false / absent
    POST /api/v1/query/answer               REST (Mangum) 400: use …/answer/stream         whole answer (JSON)
    POST /api/v1/query/answer/stream        streaming     SSE                             absent: SSE; false: JSON
    POST /api/v1/query/answer (hidden)      streaming     SSE                             whole answer (JSON)

With RAG_STREAM_ENABLED=false, `stream: true` anywhere and any request to …/answer/stream answer 400
saying streaming is disabled. Input errors (an empty query, topK or the threshold out of range, a `stream` not boolean) are 400, never 422, whatever `stream`
says. Errors before the first event (retrieval, a bad filter) answer with their HTTP status even on the
stream; once the stream has started, a failure is an `error` event with the error JSON.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import Any

from pydantic import Field, StrictBool
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse

from rag_orchestrator.api.answer_spending import MeteredAnswers
from rag_orchestrator.api.auth import get_asker
from rag_orchestrator.api.deps import Services, get_answers, get_settings
from rag_orchestrator.api.errors import error_body
from rag_orchestrator.api.query import QueryRequest, retrieval_limits
from rag_orchestrator.api.routing import Depends, Router
from rag_orchestrator.api.sse import ANSWER_STREAM, SSE_HEADERS, encode, event_stream
from rag_orchestrator.config import Settings
from rag_orchestrator.domain.base import new_id
from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.errors import BadRequest
from rag_orchestrator.retrieval.answers import (
    AnswerEvent,
    AnswerQuery,
    AnswerResponse,
    DeltaEvent,
    DoneEvent,
    ErrorEvent,
    SourcesEvent,
    collect_answer,
)

ANSWER_PATH = "/api/v1/query/answer"
STREAM_PATH = "/api/v1/query/answer/stream"
USE_STREAM_PATH = f"This endpoint answers whole and cannot stream; POST the same body to {STREAM_PATH} for a streamed answer"
STREAMING_DISABLED = (
    f"Streaming answers are disabled (RAG_STREAM_ENABLED=false); POST to {ANSWER_PATH} without stream"
)

_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"description": "Invalid request"},
    502: {"description": "The model failed"},
    503: {"description": "The knowledge base or the embedder is unavailable (with Retry-After)"},
}
router = Router(tags=["knowledge base"], bad_request=True)
stream_router = Router(tags=["knowledge base"], bad_request=True)


class AnswerRequest(QueryRequest):
    stream: StrictBool | None = Field(
        None, description="true: server-sent events (only on the streaming routes)"
    )


def check(services: Services) -> None:
    """An unreadable or malformed prompt template stops start-up."""
    services.answer_template  # noqa: B018 (read and checked once, kept for the answers)


def _query(body: AnswerRequest, request: Request, settings: Settings, streaming: bool) -> AnswerQuery:
    top_k, threshold = retrieval_limits(body, settings)
    return AnswerQuery(
        query=body.query,
        top_k=top_k,
        threshold=threshold,
        source=body.source,
        tags=tuple(body.tags or ()),
        streaming=streaming,
        query_id=getattr(request.state, "request_id", None) or new_id(),
    )


def _payload(event: AnswerEvent, request_id: str) -> dict:
    match event:
        case SourcesEvent(sources=sources):
            return {"sources": [s.model_dump(mode="json") for s in sources]}
        case DeltaEvent(text=text):
            return {"delta": text}
        case DoneEvent(answer=answer):
            return answer.model_dump(mode="json")
        case ErrorEvent(error=error):
            return {
                **error_body(error.status_code, error.public_message, request_id, error.error),
                "status": error.status_code,
            }


async def _sse(
    first: AnswerEvent, events: AsyncGenerator[AnswerEvent, None], request_id: str
) -> AsyncIterator[bytes]:
    yield encode(first.type, _payload(first, request_id), 1)
    seq = 1
    async with aclosing(events) as rest:
        async for event in rest:
            seq += 1
            yield encode(event.type, _payload(event, request_id), seq)


async def _respond(
    body: AnswerRequest,
    request: Request,
    asker: Caller,
    settings: Settings,
    answers: MeteredAnswers,
    streaming: bool,
) -> JSONResponse | StreamingResponse:
    query = _query(body, request, settings, streaming)
    events = answers.events(asker, query)
    if not streaming:  # a Response: these routes' response_class is StreamingResponse
        return JSONResponse((await collect_answer(events)).model_dump(mode="json"))
    first = await anext(events)  # retrieval done: its failures still get their HTTP status
    if isinstance(first, ErrorEvent):
        await events.aclose()
        raise first.error
    return StreamingResponse(
        _sse(first, events, query.query_id), media_type="text/event-stream", headers=SSE_HEADERS
    )


@router.post(
    ANSWER_PATH, response_model=AnswerResponse, responses=_ERRORS, summary="An answer with citations, whole"
)
async def answer(
    body: AnswerRequest,
    request: Request,
    caller: Caller = Depends(get_asker),
    settings: Settings = Depends(get_settings),
    answers: MeteredAnswers = Depends(get_answers),
) -> AnswerResponse:
    if body.stream:
        raise BadRequest(USE_STREAM_PATH if settings.rag_stream_enabled else STREAMING_DISABLED)
    return await collect_answer(answers.events(caller, _query(body, request, settings, False)))


@stream_router.post(
    STREAM_PATH,
    response_class=StreamingResponse,
    responses={
        200: {
            "model": AnswerResponse,
            "description": "Server-sent events; with `stream: false`, the whole answer as JSON",
            "content": event_stream(ANSWER_STREAM),
        },
        **_ERRORS,
    },
    summary="An answer with citations as server-sent events: sources, delta…, done (or error)",
)
async def answer_stream(
    body: AnswerRequest,
    request: Request,
    caller: Caller = Depends(get_asker),
    settings: Settings = Depends(get_settings),
    answers: MeteredAnswers = Depends(get_answers),
):
    if not settings.rag_stream_enabled:
        raise BadRequest(STREAMING_DISABLED)
    return await _respond(body, request, caller, settings, answers, streaming=body.stream is not False)


@stream_router.post(ANSWER_PATH, include_in_schema=False)
async def answer_on_streaming_function(
    body: AnswerRequest,
    request: Request,
    caller: Caller = Depends(get_asker),
    settings: Settings = Depends(get_settings),
    answers: MeteredAnswers = Depends(get_answers),
):
    """`stream: true` reaching the streaming function streams; otherwise the whole answer."""
    if body.stream and not settings.rag_stream_enabled:
        raise BadRequest(STREAMING_DISABLED)
    return await _respond(body, request, caller, settings, answers, streaming=bool(body.stream))
