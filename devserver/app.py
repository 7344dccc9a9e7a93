"""The local app: every router in one FastAPI app, plus what only `make dev` serves — the chat page at
`/` (static files in devserver/static), the demo tool API under /demo-tools and the demo MCP server
under /demo-mcp, and the S3 events the local moto server sends (in AWS, S3 notifies AttachmentFunction;
here the app processes the upload the same way)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import BackgroundTasks, FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from devserver.demo_mcp import MOUNT as MCP_MOUNT
from devserver.demo_mcp import DemoMcpApp
from devserver.demo_tools import MOUNT, demo_tools_app, service_url
from devserver.stack import S3_EVENTS_PATH
from rag_orchestrator.api.app import ALL_ROUTERS, create_app
from rag_orchestrator.attachments.events import process_event
from rag_orchestrator.observability import logger

STATIC = Path(__file__).with_name("static")


def build_app() -> FastAPI:
    """uvicorn's factory (`devserver.app:build_app`): settings are read when it is called."""
    app = create_app(ALL_ROUTERS)

    @app.get("/", include_in_schema=False)
    def chat_page() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})

    async def process(event: dict[str, Any]) -> None:
        try:
            await process_event(app.state.services.attachments, event)
        except Exception:  # AttachmentFunction would be retried; here the log says what went wrong
            logger.exception("local S3 event not processed")

    @app.post(S3_EVENTS_PATH, include_in_schema=False)
    async def s3_events(event: dict[str, Any], background: BackgroundTasks) -> dict[str, int]:
        background.add_task(process, event)
        return {"accepted": len(event.get("Records") or [])}

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    issuer = app.state.services.settings.assertion_issuer
    app.mount(MOUNT, demo_tools_app(service_url(), issuer), name="demo-tools")
    app.mount(MCP_MOUNT, DemoMcpApp(service_url(), issuer), name="demo-mcp")
    return app
