"""The event log beside the conversations CONVERSATION_STORAGE names; boto3 is imported only for DynamoDB."""

from __future__ import annotations

from rag_orchestrator.aws import AwsClients
from rag_orchestrator.config import Settings
from rag_orchestrator.stream_log.log import EventLog


def create_event_log(settings: Settings, aws: AwsClients) -> EventLog:
    if settings.conversation_storage == "memory":
        from rag_orchestrator.stream_log.in_process import InProcessEventLog

        return InProcessEventLog()
    from rag_orchestrator.stream_log.dynamo import DynamoEventLog

    return DynamoEventLog.from_settings(settings, aws)
