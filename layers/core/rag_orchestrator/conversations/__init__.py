"""Conversations: the store (DynamoDB or memory, `store.ConversationStore`), S3 transcripts, archival.

This package imports nothing; `factory.create_store` picks the store CONVERSATION_STORAGE names.
"""
