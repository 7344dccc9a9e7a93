"""IngestFunction: S3 ObjectCreated under documents/ -> chunks in Chroma. A failed object fails the
invocation (after the others are done), so Lambda retries it and then sends the event to the DLQ."""

from rag_orchestrator.startup import frozen_start

with frozen_start():  # no GC passes over start-up's objects (rag_orchestrator/startup.py)
    from functools import cache

    from aws_lambda_powertools.utilities.typing import LambdaContext

    from rag_orchestrator.api import snapstart
    from rag_orchestrator.aws import AwsClients
    from rag_orchestrator.config import get_settings
    from rag_orchestrator.observability import logger, publishes_metrics
    from rag_orchestrator.retrieval.knowledge_base import KnowledgeBase, create_knowledge_base
    from rag_orchestrator.retrieval.s3_ingest import ingest_s3_event
    from rag_orchestrator.ssm_params import SecretReader

    aws = AwsClients()  # this function's one boto3 session; clients made on first use
    settings = get_settings().read_secrets_with(SecretReader(aws))  # a bad setting fails the cold start
    snapstart.register(aws)  # with the template's SnapStart on (docs/performance.md)


@cache
def knowledge_base() -> KnowledgeBase:
    """This function's parts, built on the first event (the embedder's client is not a start-up cost)."""
    return create_knowledge_base(settings, aws)


@logger.inject_lambda_context(clear_state=True)
@publishes_metrics
def handler(event: dict, context: LambdaContext) -> dict:
    result = ingest_s3_event(event, knowledge_base(), aws.lazy("s3"))
    logger.info(
        "ingestion done", extra={"documents": len(result["ingested"]), "skipped": len(result["skipped"])}
    )
    return result
