"""The document registry: one entry per document in the knowledge base, for listing it (docs/documents.md).

Chroma holds chunks and has no cheap "distinct documentId", so ingestion (POST /api/v1/ingest and
the IngestFunction alike) records each document here once its chunks are in: in the conversations
table (`PK=KB, SK=DOC#<documentId>`, one partition read by Query, never a Scan), or in process
memory when CONVERSATION_STORAGE=memory.
"""

from __future__ import annotations

import threading
from datetime import datetime
from typing import Any, Protocol

from pydantic import Field

from rag_orchestrator.attribute_values import deserialize, serialize
from rag_orchestrator.aws import AwsClients
from rag_orchestrator.config import Settings
from rag_orchestrator.domain.base import CamelModel, utcnow
from rag_orchestrator.errors import ConfigError, StorageUnavailable
from rag_orchestrator.observability import logger

PARTITION, PREFIX = "KB", "DOC#"


class DocumentInfo(CamelModel):
    document_id: str
    title: str
    source: str | None = None
    tags: list[str] = Field(default_factory=list)
    chunks: int
    updated_at: datetime = Field(default_factory=utcnow)


class DocumentRegistry(Protocol):
    def record(self, document: DocumentInfo) -> None: ...

    def get(self, document_id: str) -> DocumentInfo | None: ...

    def remove(self, document_id: str) -> None: ...

    def page(self, after: str | None, limit: int) -> tuple[list[DocumentInfo], bool]:
        """Up to `limit` documents by documentId after `after`, and whether more follow."""
        ...


class MemoryDocumentRegistry:
    def __init__(self) -> None:
        self._documents: dict[str, DocumentInfo] = {}
        self._lock = threading.Lock()

    def record(self, document: DocumentInfo) -> None:
        with self._lock:
            self._documents[document.document_id] = document

    def get(self, document_id: str) -> DocumentInfo | None:
        with self._lock:
            return self._documents.get(document_id)

    def remove(self, document_id: str) -> None:
        with self._lock:
            self._documents.pop(document_id, None)

    def page(self, after: str | None, limit: int) -> tuple[list[DocumentInfo], bool]:
        with self._lock:
            ids = sorted(i for i in self._documents if after is None or i > after)
            return [self._documents[i] for i in ids[:limit]], len(ids) > limit


class DynamoDocumentRegistry:
    def __init__(self, client: Any, table: str) -> None:
        self._client = client
        self._table = table

    def record(self, document: DocumentInfo) -> None:
        values = document.model_dump(mode="json", by_alias=True)
        self._call("put_item", Item=_item(values | {"PK": PARTITION, "SK": PREFIX + document.document_id}))

    def get(self, document_id: str) -> DocumentInfo | None:
        found = self._call("get_item", Key=_key(document_id), ConsistentRead=True).get("Item")
        return _document(found) if found else None

    def remove(self, document_id: str) -> None:
        self._call("delete_item", Key=_key(document_id))

    def page(self, after: str | None, limit: int) -> tuple[list[DocumentInfo], bool]:
        params: dict[str, Any] = {
            "KeyConditionExpression": "PK = :pk",
            "ExpressionAttributeValues": {":pk": {"S": PARTITION}},
        }
        if after is not None:
            params["ExclusiveStartKey"] = _key(after)
        found: list[dict[str, Any]] = []
        while len(found) <= limit:
            response = self._call("query", **params, Limit=limit + 1 - len(found))
            found += response.get("Items", ())
            if "LastEvaluatedKey" not in response:
                break
            params["ExclusiveStartKey"] = response["LastEvaluatedKey"]
        return [_document(item) for item in found[:limit]], len(found) > limit

    def _call(self, operation: str, **params: Any) -> dict[str, Any]:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return dict(getattr(self._client, operation)(TableName=self._table, **params))
        except (ClientError, BotoCoreError) as exc:
            logger.error("document registry call failed", extra={"operation": operation, "detail": str(exc)})
            raise StorageUnavailable("The document registry is unavailable") from None


def _key(document_id: str) -> dict[str, Any]:
    return {"PK": {"S": PARTITION}, "SK": {"S": PREFIX + document_id}}


def _item(values: dict[str, Any]) -> dict[str, Any]:
    return {name: serialize(value) for name, value in values.items()}


def _document(item: dict[str, Any]) -> DocumentInfo:
    values = {name: deserialize(value) for name, value in item.items()}
    return DocumentInfo.model_validate(values | {"chunks": int(values.get("chunks", 0))})


def create_registry(settings: Settings, aws: AwsClients | None) -> DocumentRegistry:
    """The registry beside the conversations: in their table (with the root's clients), or in memory with
    the memory store."""
    if settings.conversation_storage == "memory" or not settings.conversations_table:
        return MemoryDocumentRegistry()
    if aws is None:
        raise ConfigError("the document registry in DynamoDB was given no AWS clients")
    # Lazy: the chat-stream function builds its toolbox (and so this) before it listens, and would
    # otherwise import botocore and make the client there, ahead of the first turn that needs them.
    return DynamoDocumentRegistry(aws.lazy("dynamodb"), settings.conversations_table)
