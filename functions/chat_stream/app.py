"""ChatStreamFunction: the streaming routes, served by uvicorn behind the Lambda Web Adapter."""

from rag_orchestrator.startup import frozen_start

with frozen_start():  # no GC passes over start-up's objects (rag_orchestrator/startup.py)
    from rag_orchestrator.api.app import STREAM_ROUTERS, create_app
    from rag_orchestrator.api.lambda_context import LambdaContextMiddleware

    app = create_app(STREAM_ROUTERS)
    app.add_middleware(LambdaContextMiddleware)  # what Powertools' handler decorators do elsewhere
