"""The store CONVERSATION_STORAGE names; DynamoDB (and boto3) is imported only when used."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rag_orchestrator.aws import AwsClients
from rag_orchestrator.config import Settings
from rag_orchestrator.tracing import NO_TRACER, Tracer

if TYPE_CHECKING:  # imported where chosen: the in-process store never loads boto3
    from rag_orchestrator.conversations.dynamo import DynamoConversationStore
    from rag_orchestrator.conversations.in_process import InProcessStore


def create_store(
    settings: Settings, aws: AwsClients, tracer: Tracer = NO_TRACER
) -> DynamoConversationStore | InProcessStore:
    """Either store: each provides every part (the routes', conversations/store.py; a turn's, loop/ports.py)."""
    if settings.conversation_storage == "memory":
        from rag_orchestrator.conversations.in_process import InProcessStore

        return InProcessStore()
    from rag_orchestrator.conversations.dynamo import DynamoConversationStore

    return DynamoConversationStore.from_settings(settings, aws, tracer)
