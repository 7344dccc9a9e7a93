"""LifecycleFunction: erasures and exports, handed over on the conversations table's stream (docs/privacy.md).
A run stopped by the timeout fails, the stream delivers the batch again, and the erasure resumes where it stopped."""

from rag_orchestrator.startup import frozen_start

with frozen_start():  # no GC passes over start-up's objects (rag_orchestrator/startup.py)
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from rag_orchestrator.api import snapstart
    from rag_orchestrator.aws import AwsClients
    from rag_orchestrator.config import get_settings
    from rag_orchestrator.lifecycle.dispatch import events_of
    from rag_orchestrator.lifecycle.runner import run_lifecycle_event
    from rag_orchestrator.observability import logger
    from rag_orchestrator.ssm_params import SecretReader

    aws = AwsClients()  # this function's one boto3 session; clients made on first use
    settings = get_settings().read_secrets_with(SecretReader(aws))  # a bad setting fails the cold start
    snapstart.register(aws)  # with the template's SnapStart on (docs/performance.md)


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict, context: LambdaContext) -> dict:
    done = []
    for job_event in events_of(event):  # a stream batch: one event per inserted RUN# item
        logger.info("lifecycle job started", extra={"kind": job_event["kind"]})
        job = run_lifecycle_event(settings, aws, job_event)
        logger.info("lifecycle job done", extra={"status": job.get("status"), "counts": job.get("counts")})
        done.append({k: v for k, v in job.items() if k != "callerId"})
    return {"jobs": done}
