"""AttachmentFunction: S3 ObjectCreated under attachments/ -> the attachment read into text segments.
An object that cannot be processed now fails the invocation (after the others), so Lambda retries it
and then sends the event to the DLQ; a file that cannot be read is recorded as FAILED, not retried."""

from rag_orchestrator.startup import frozen_start

with frozen_start():  # no GC passes over start-up's objects (rag_orchestrator/startup.py)
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from rag_orchestrator.attachments.events import process_s3_event
    from rag_orchestrator.attachments.factory import create_function_attachments
    from rag_orchestrator.aws import AwsClients
    from rag_orchestrator.config import get_settings
    from rag_orchestrator.observability import logger, publishes_metrics
    from rag_orchestrator.ssm_params import SecretReader

    aws = AwsClients()  # this function's one boto3 session; clients made on first use
    # A bad setting fails the cold start, naming it.
    settings = get_settings().read_secrets_with(SecretReader(aws))
    attachments = create_function_attachments(settings, aws)


@logger.inject_lambda_context(clear_state=True)
@publishes_metrics
def handler(event: dict, context: LambdaContext) -> dict:
    result = process_s3_event(attachments, event)
    logger.info(
        "attachments done", extra={"processed": len(result["processed"]), "skipped": len(result["skipped"])}
    )
    return result
