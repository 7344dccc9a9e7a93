"""/docs: Swagger UI on the app's own OpenAPI document, its files served by the app itself from the
`fastapi-swagger` package — no CDN, so the page works offline and sends nothing elsewhere (docs/api.md).
The package, and FastAPI's page template, are read on the first request for the page, never at start-up."""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from rag_orchestrator.errors import NotFound

ASSETS = "/docs/assets"
_TYPES = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui.css": "text/css",
    "favicon-32x32.png": "image/png",
}
# No validator badge: Swagger UI would otherwise send the document's URL to a public validator.
PARAMETERS = {"validatorUrl": None, "tryItOutEnabled": True, "persistAuthorization": True}


OPENAPI_URL = "/openapi.json"
TITLE = "RAG Orchestrator"
DESCRIPTION = "Serverless RAG chat backend: conversations, streamed agentic turns, retrieval, answers."


def install_docs(app: Starlette, title: str, document: Callable[[], dict[str, Any]]) -> None:
    """/openapi.json (`document()`, built on its first request), /docs and the page's files."""

    async def openapi(request: Request) -> JSONResponse:
        built = document()
        root = request.scope.get("root_path", "").rstrip("/")
        if root and root not in {server.get("url") for server in built.get("servers", [])}:
            built = {**built, "servers": [{"url": root}, *built.get("servers", [])]}  # as FastAPI's own
        return JSONResponse(built)

    async def docs(request: Request) -> HTMLResponse:
        from fastapi.openapi.docs import get_swagger_ui_html

        root = request.scope.get("root_path", "").rstrip("/")
        return get_swagger_ui_html(
            openapi_url=f"{root}{OPENAPI_URL}",
            title=f"{title} — API",
            swagger_js_url=f"{root}{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{root}{ASSETS}/favicon-32x32.png",
            swagger_ui_parameters=PARAMETERS,
        )

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _TYPES:
            raise NotFound(f"No docs asset {name}")
        content = (resources.files("fastapi_swagger") / "resources" / name).read_bytes()
        headers = {"Cache-Control": "public, max-age=86400"}
        return Response(content, media_type=_TYPES[name], headers=headers)

    app.add_route(OPENAPI_URL, openapi, methods=["GET"], include_in_schema=False)
    app.add_route("/docs", docs, methods=["GET"], include_in_schema=False)
    app.add_route(ASSETS + "/{name}", asset, methods=["GET"], include_in_schema=False)
