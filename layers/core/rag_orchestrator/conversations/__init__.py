"""Conversations: the store (DynamoDB, or in process), S3 transcripts, archival.

This package imports nothing; `factory.create_store` picks the store CONVERSATION_STORAGE names.
"""
