"""ArchiveFunction (EventBridge, hourly): idle conversations to S3 transcripts, deleted ones purged.
It stops before the Lambda timeout; the next run goes on from where it stopped."""

from rag_orchestrator.startup import frozen_start

with frozen_start():  # no GC passes over start-up's objects (rag_orchestrator/startup.py)
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from rag_orchestrator.api import snapstart
    from rag_orchestrator.aws import AwsClients
    from rag_orchestrator.config import get_settings
    from rag_orchestrator.conversations.archival import run_archival
    from rag_orchestrator.observability import logger, publishes_metrics
    from rag_orchestrator.ssm_params import SecretReader

    aws = AwsClients()  # this function's one boto3 session; clients made on first use
    settings = get_settings().read_secrets_with(SecretReader(aws))  # a bad setting fails the cold start
    snapstart.register(aws)  # with the template's SnapStart on (docs/performance.md)


@logger.inject_lambda_context(clear_state=True)
@publishes_metrics
def handler(event: dict, context: LambdaContext) -> dict:
    logger.info("archival started", extra={"scheduled_at": event.get("time")})
    report = run_archival(settings, aws, remaining_ms=context.get_remaining_time_in_millis)
    return report.as_dict()
