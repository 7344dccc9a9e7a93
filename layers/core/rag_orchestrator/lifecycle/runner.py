"""The lifecycle jobs built from the settings and the composition root's AWS clients, and the event
LifecycleFunction (or a local thread) runs."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from rag_orchestrator.aws import AwsClients
from rag_orchestrator.config import Settings, in_lambda
from rag_orchestrator.conversations.audit_archive import TrailKeeper
from rag_orchestrator.conversations.cursors import actor_key
from rag_orchestrator.conversations.s3_objects import ObjectStore
from rag_orchestrator.conversations.table import Table
from rag_orchestrator.conversations.transcripts import S3AuditTrails
from rag_orchestrator.errors import BadRequest, StorageUnavailable
from rag_orchestrator.lifecycle.conversation_erasure import Checkpoint, ConversationEraser
from rag_orchestrator.lifecycle.erasure import CallerEraser
from rag_orchestrator.lifecycle.export import URL_SECONDS, ExportDocument, Exports
from rag_orchestrator.lifecycle.jobs import ErasureJobs
from rag_orchestrator.lifecycle.service import Lifecycle
from rag_orchestrator.lifecycle.sharing import Shares, revoker


def _table(settings: Settings, aws: AwsClients) -> Table:
    if settings.conversation_storage != "dynamodb":
        raise StorageUnavailable("Erasure and export need CONVERSATION_STORAGE=dynamodb")
    return Table(aws.client("dynamodb"), settings.conversations_table or "")


def caller_eraser(settings: Settings, aws: AwsClients, checkpoint: Checkpoint | None = None) -> CallerEraser:
    from rag_orchestrator.retrieval.fragments import unembedded_memory

    table, s3 = _table(settings, aws), aws.client("s3")
    objects = ObjectStore(s3, settings.transcripts_bucket or "")
    attachments = ObjectStore(s3, settings.attachments_bucket) if settings.attachments_bucket else None
    trails = S3AuditTrails(s3, settings.transcripts_bucket or "")
    retention = timedelta(days=settings.audit_retention_days)
    memory = unembedded_memory(settings)
    conversations = ConversationEraser(
        table,
        objects,
        attachments,
        trails,
        forget=memory.forget_conversation,
        revoke_shares=revoker(table, objects),
        audit_retention=retention,
        checkpoint=checkpoint,
    )
    return CallerEraser(
        table,
        ErasureJobs(table),
        conversations,
        objects=objects,
        attachment_objects=attachments,
        forget_caller=memory.erase_caller,
        actor_key=actor_key(settings),
        keeper=TrailKeeper(table, objects, trails, retention),
    )


def exports(settings: Settings, aws: AwsClients) -> Exports:
    return Exports(_table(settings, aws), aws.client("s3"), settings.transcripts_bucket or "")


def build_export(settings: Settings, aws: AwsClients, export_id: str) -> dict[str, Any]:
    from rag_orchestrator.attachments.objects import AttachmentObjects
    from rag_orchestrator.conversations.dynamo import DynamoConversationStore
    from rag_orchestrator.retrieval.fragments import unembedded_memory

    bucket = settings.attachments_bucket
    files = AttachmentObjects(aws.client("s3"), bucket) if bucket else None
    memory = unembedded_memory(settings)
    document = ExportDocument(
        _table(settings, aws),
        DynamoConversationStore.from_settings(settings, aws),
        memory.of_caller,
        (lambda key: files.presign_get(key, URL_SECONDS)) if files else None,
    )
    exports(settings, aws).build(export_id, document)
    return {"exportId": export_id}


def run_lifecycle_event(settings: Settings, aws: AwsClients, event: dict[str, Any]) -> dict[str, Any]:
    """One job: `{"kind": "erasure", "erasureId": ...}` or `{"kind": "export", "exportId": ...}`."""
    if event.get("kind") == "erasure" and isinstance(event.get("erasureId"), str):
        return caller_eraser(settings, aws).run(event["erasureId"])
    if event.get("kind") == "export" and isinstance(event.get("exportId"), str):
        return build_export(settings, aws, event["exportId"])
    raise BadRequest("Unknown lifecycle event")


def create_lifecycle(settings: Settings, aws: AwsClients) -> Lifecycle:
    """The routes' side: jobs on the table, handed to LifecycleFunction through the table's stream
    inside Lambda (a thread would freeze with the response), to a thread of this process elsewhere."""
    from rag_orchestrator.lifecycle.dispatch import StreamDispatcher, ThreadDispatcher
    from rag_orchestrator.lifecycle.service import Dispatcher

    table = _table(settings, aws)
    dispatcher: Dispatcher
    if in_lambda():
        dispatcher = StreamDispatcher(table)
    else:
        dispatcher = ThreadDispatcher(lambda event: run_lifecycle_event(settings, aws, event))
    return Lifecycle(ErasureJobs(table), exports(settings, aws), dispatcher, actor_key(settings))


def create_shares(settings: Settings, aws: AwsClients) -> Shares | None:
    """Shares on the table and the transcripts bucket; None with CONVERSATION_STORAGE=memory."""
    if settings.conversation_storage != "dynamodb":
        return None
    return Shares(_table(settings, aws), aws.client("s3"), settings.transcripts_bucket or "")
