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


def create_attachments(settings: Settings, aws: AwsClients, memory: FragmentIndex | None) -> Attachments:
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
    return Attachments(store, objects, settings, engines=partial(build_engines, settings, aws), memory=memory)
