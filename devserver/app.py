"""The local app: every router in one FastAPI app, plus what only `make dev` serves — the chat page at
`/` (static files in devserver/static) and the demo tool API under /demo-tools."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from devserver.demo_tools import MOUNT, demo_tools_app
from rag_orchestrator.api.app import ALL_ROUTERS, create_app

STATIC = Path(__file__).with_name("static")


def build_app() -> FastAPI:
    """uvicorn's factory (`devserver.app:build_app`): settings are read when it is called."""
    app = create_app(ALL_ROUTERS)

    @app.get("/", include_in_schema=False)
    def chat_page() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.mount(MOUNT, demo_tools_app(), name="demo-tools")
    return app
