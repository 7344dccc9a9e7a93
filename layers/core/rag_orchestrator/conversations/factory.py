"""The store CONVERSATION_STORAGE names; DynamoDB (and boto3) is imported only when used."""

from __future__ import annotations

from rag_orchestrator.aws import AwsClients
from rag_orchestrator.config import Settings
from rag_orchestrator.conversations.store import ConversationStore


def create_store(settings: Settings, aws: AwsClients) -> ConversationStore:
    if settings.conversation_storage == "memory":
        from rag_orchestrator.conversations.memory import MemoryConversationStore

        return MemoryConversationStore()
    from rag_orchestrator.conversations.dynamo import DynamoConversationStore

    return DynamoConversationStore.from_settings(settings, aws)
