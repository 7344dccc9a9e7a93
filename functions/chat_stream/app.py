"""ChatStreamFunction: the streaming routes, served by uvicorn behind the Lambda Web Adapter."""

from rag_orchestrator.api.app import STREAM_ROUTERS, create_app
from rag_orchestrator.api.lambda_context import LambdaContextMiddleware

app = create_app(STREAM_ROUTERS)
app.add_middleware(LambdaContextMiddleware)  # what Powertools' handler decorators do elsewhere
