"""Conversations: the store (DynamoDB or memory), S3 transcripts, and the ContextManager over them."""

from rag_orchestrator.conversations.context import ContextManager, ConversationContext, get_context_manager
from rag_orchestrator.conversations.store import ConversationStore

__all__ = ["ContextManager", "ConversationContext", "ConversationStore", "get_context_manager"]
