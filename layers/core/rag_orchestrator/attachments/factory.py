"""Attachments from settings: the store CONVERSATION_STORAGE names, the bucket ATTACHMENTS_BUCKET names,
their segments indexed in the conversation memory the caller built (None: not indexed)."""

from __future__ import annotations

from functools import partial

from rag_orchestrator.attachments.engines import build_engines
from rag_orchestrator.attachments.objects import AttachmentObjects
from rag_orchestrator.attachments.service import Attachments
from rag_orchestrator.attachments.store import AttachmentStore
from rag_orchestrator.aws import AwsClients
from rag_orchestrator.config import Settings
from rag_orchestrator.errors import StorageUnavailable
from rag_orchestrator.retrieval.fragments import FragmentIndex
from rag_orchestrator.retrieval.memory_switch import Conversations


def create_attachments(
    settings: Settings,
    aws: AwsClients,
    memory: FragmentIndex | None,
    conversations: Conversations | None = None,
) -> Attachments:
    """The attachments service; with `memory`, READY segments are indexed into it, and forgotten again
    when `conversations` says their conversation is gone or temporary by then."""
    if not settings.attachments_bucket:
        raise StorageUnavailable("Attachments are not configured (ATTACHMENTS_BUCKET is not set)")
    store: AttachmentStore
    if settings.conversation_storage == "memory":
        from rag_orchestrator.attachments.in_process_store import InProcessAttachmentStore

        store = InProcessAttachmentStore()
    else:
        from rag_orchestrator.attachments.dynamo_store import DynamoAttachmentStore

        store = DynamoAttachmentStore.from_settings(settings, aws)
    objects = AttachmentObjects(aws.lazy("s3"), settings.attachments_bucket)
    engines = partial(build_engines, settings, aws)
    return Attachments(store, objects, settings, engines=engines, memory=memory, conversations=conversations)


def create_function_attachments(settings: Settings, aws: AwsClients) -> Attachments:
    """AttachmentFunction's service (functions/attachments/app.py): segments indexed into conversation
    memory with MEMORY_ENABLED, and kept only while their conversation is remembered, as its table says
    (in-process storage holds no other process's conversations: nothing to read there)."""
    from rag_orchestrator.conversations.factory import create_store
    from rag_orchestrator.retrieval.embedders import create_embedder
    from rag_orchestrator.retrieval.fragments import create_fragment_index

    memory = (
        create_fragment_index(settings, create_embedder(settings, aws)) if settings.memory_enabled else None
    )
    shared = memory is not None and settings.conversation_storage == "dynamodb"
    return create_attachments(settings, aws, memory, create_store(settings, aws) if shared else None)
