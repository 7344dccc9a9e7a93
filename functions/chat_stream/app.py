"""ChatStreamFunction: the streaming routes, served by uvicorn behind the Lambda Web Adapter."""

from rag_orchestrator.api.app import STREAM_ROUTERS, create_app

app = create_app(STREAM_ROUTERS)
