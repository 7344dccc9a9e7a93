"""Title and metadata writes of the DynamoDB store: the owner's PATCH, the automatic title, which
never replaces one set meanwhile (conditional on there being none), and the running summary, which
never replaces a newer one (conditional on the `summarizedThrough` it was built on)."""

from __future__ import annotations

from typing import Any

from rag_orchestrator.conversations import items as it
from rag_orchestrator.conversations.keys import iso
from rag_orchestrator.conversations.meta_update import OWNED, meta_key
from rag_orchestrator.conversations.table import ConditionFailed, Table
from rag_orchestrator.conversations.titles import title_search
from rag_orchestrator.domain.base import utcnow
from rag_orchestrator.domain.conversations import Conversation, ConversationStatus
from rag_orchestrator.errors import ConversationNotFound


class TitleWrites:
    def __init__(self, table: Table) -> None:
        self._table = table

    def update(
        self,
        conversation_id: str,
        caller_id: str,
        title: str | None,
        metadata: dict[str, str] | None,
        memory: bool | None = None,
    ) -> Conversation:
        """updatedAt changes, the listing's order (GSI1SK) does not: a rename is no activity."""
        sets = ["updatedAt = :now"]
        values: dict[str, Any] = {
            ":now": iso(utcnow()),
            ":caller": caller_id,
            ":deleted": ConversationStatus.DELETED.value,
        }
        if title is not None:
            sets += ["title = :title", "titleSearch = :search"]
            values |= {":title": title, ":search": title_search(title)}
        if metadata is not None:
            sets.append("metadata = :metadata")
            values[":metadata"] = metadata
        if memory is not None:
            sets.append("memory = :memory")
            values[":memory"] = memory
        try:
            response = self._table.call(
                "update_item",
                Key=meta_key(conversation_id),
                UpdateExpression="SET " + ", ".join(sets),
                ConditionExpression=OWNED,
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues=it.to_attributes(values),
                ReturnValues="ALL_NEW",
            )
        except ConditionFailed:
            raise ConversationNotFound(conversation_id) from None
        return it.conversation_from_item(it.from_attributes(response["Attributes"]))

    def set_auto_title(self, conversation_id: str, title: str) -> bool:
        try:
            self._table.call(
                "update_item",
                Key=meta_key(conversation_id),
                UpdateExpression="SET title = :title, titleSearch = :search",
                ConditionExpression="attribute_exists(PK) AND attribute_not_exists(title) AND #status <> :deleted",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues=it.to_attributes(
                    {
                        ":title": title,
                        ":search": title_search(title),
                        ":deleted": ConversationStatus.DELETED.value,
                    }
                ),
            )
        except ConditionFailed:
            return False
        return True

    def set_summary(self, conversation_id: str, summary: str, through: str, previous: str | None) -> bool:
        values: dict[str, Any] = {
            ":summary": summary,
            ":through": through,
            ":deleted": ConversationStatus.DELETED.value,
        }
        if previous is None:
            built_on = "attribute_not_exists(summarizedThrough)"
        else:
            built_on, values[":previous"] = "summarizedThrough = :previous", previous
        try:
            self._table.call(
                "update_item",
                Key=meta_key(conversation_id),
                UpdateExpression="SET summary = :summary, summarizedThrough = :through",
                ConditionExpression=f"attribute_exists(PK) AND #status <> :deleted AND {built_on}",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues=it.to_attributes(values),
            )
        except ConditionFailed:
            return False
        return True
