"""ApiFunction: the REST routes behind API Gateway, adapted by Mangum. Metrics are flushed per request
by the app's own middleware."""

from rag_orchestrator.startup import frozen_start

with frozen_start():  # no GC passes over start-up's objects (rag_orchestrator/startup.py)
    from mangum import Mangum

    from rag_orchestrator.api import snapstart
    from rag_orchestrator.api.app import API_ROUTERS, create_app
    from rag_orchestrator.observability import logger

    app = create_app(API_ROUTERS)
    snapstart.register(app.state.services.aws)  # with the template's SnapStart on (docs/performance.md)
    _mangum = Mangum(app, lifespan="off")


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict, context: object) -> dict:
    return _mangum(event, context)
