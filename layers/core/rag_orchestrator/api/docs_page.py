"""/docs: Swagger UI on the app's own OpenAPI document, its files served by the app itself from the
`fastapi-swagger` package — no CDN, so the page works offline and sends nothing elsewhere (docs/api.md).
The package is read on the first request for the page, never at start-up."""

from __future__ import annotations

from importlib import resources

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, Response

from rag_orchestrator.errors import NotFound

ASSETS = "/docs/assets"
_TYPES = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui.css": "text/css",
    "favicon-32x32.png": "image/png",
}
# No validator badge: Swagger UI would otherwise send the document's URL to a public validator.
PARAMETERS = {"validatorUrl": None, "tryItOutEnabled": True, "persistAuthorization": True}


def install_docs(app: FastAPI) -> None:
    @app.get("/docs", include_in_schema=False)
    async def docs(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "").rstrip("/")
        return get_swagger_ui_html(
            openapi_url=f"{root}{app.openapi_url}",
            title=f"{app.title} — API",
            swagger_js_url=f"{root}{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{root}{ASSETS}/favicon-32x32.png",
            swagger_ui_parameters=PARAMETERS,
        )

    @app.get(ASSETS + "/{name}", include_in_schema=False)
    async def asset(name: str) -> Response:
        if name not in _TYPES:
            raise NotFound(f"No docs asset {name}")
        content = (resources.files("fastapi_swagger") / "resources" / name).read_bytes()
        headers = {"Cache-Control": "public, max-age=86400"}
        return Response(content, media_type=_TYPES[name], headers=headers)
