"""The local app: every router in one FastAPI app, and the S3 events the local moto server sends
(in AWS, S3 notifies AttachmentFunction; here the app processes the upload the same way)."""

from typing import Any

from fastapi import BackgroundTasks

from devserver.stack import S3_EVENTS_PATH
from rag_orchestrator.api.app import ALL_ROUTERS, create_app
from rag_orchestrator.attachments.events import process_event
from rag_orchestrator.observability import logger

app = create_app(ALL_ROUTERS)


async def _process(event: dict[str, Any]) -> None:
    try:
        await process_event(app.state.services.attachments, event)
    except Exception:  # AttachmentFunction would be retried; here the log says what went wrong
        logger.exception("local S3 event not processed")


@app.post(S3_EVENTS_PATH, include_in_schema=False)
async def s3_events(event: dict[str, Any], background: BackgroundTasks) -> dict[str, int]:
    background.add_task(_process, event)
    return {"accepted": len(event.get("Records") or [])}
