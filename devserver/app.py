"""The local app: every router in one FastAPI app."""

from rag_orchestrator.api.app import ALL_ROUTERS, create_app

app = create_app(ALL_ROUTERS)
