"""Retention (CONVERSATION_RETENTION_DAYS): a conversation idle longer is deleted by the archival job,
then purged DELETED_RETENTION_DAYS later like any deleted one (docs/privacy.md).

Candidates are ACTIVE ones in ByArchive's ARCHIVE#<shard> and ARCHIVED ones in IDLE#<shard>, both by
lastMessageAt. One consistent read of META, then the same update as DELETE makes, on condition that the
conversation is unchanged since (updatedAt) and no turn holds it; then its memory fragments go, as
DELETE's do. A conversation continued meanwhile is skipped and listed again by its new last message.
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from rag_orchestrator.conversations import items as it
from rag_orchestrator.conversations.archive_steps import SKIPPED, Forget, Outcome, Result
from rag_orchestrator.conversations.dynamo_conversations import deletion
from rag_orchestrator.conversations.meta_update import LOCK_FREE, meta_key
from rag_orchestrator.conversations.table import ConditionFailed, Table
from rag_orchestrator.domain.conversations import ConversationStatus
from rag_orchestrator.observability import logger

RETIRABLE = {
    ConversationStatus.ACTIVE.value: it.ARCHIVE_PREFIX,
    ConversationStatus.ARCHIVED.value: it.IDLE_PREFIX,
}


class Retirer:
    def __init__(self, table: Table, forget: Forget, deleted_retention: timedelta) -> None:
        self._table = table
        self._forget = forget
        self._deleted_retention = deleted_retention

    def retire(self, conversation_id: str, idle_before: str) -> Result:
        meta = self._meta(conversation_id)
        if not _retirable(meta, idle_before):
            return SKIPPED
        update = deletion(
            conversation_id,
            meta["callerId"],
            self._deleted_retention,
            condition=f"updatedAt = :seen AND {LOCK_FREE}",
            values={":seen": meta["updatedAt"], ":epoch": int(time.time())},
        )
        try:
            self._table.call("update_item", **update)
        except ConditionFailed:
            return SKIPPED  # continued, deleted or taken by a turn since the read
        try:
            self._forget(conversation_id)  # as DELETE does
        except Exception:  # the purge forgets again, first thing
            logger.warning("retired conversation's fragments left for the purge", exc_info=True)
        return Result(Outcome.RETIRED)

    def _meta(self, conversation_id: str) -> dict[str, Any]:
        response = self._table.call("get_item", Key=meta_key(conversation_id), ConsistentRead=True)
        return it.from_attributes(response.get("Item") or {})


def _retirable(meta: dict[str, Any], idle_before: str) -> bool:
    prefix = RETIRABLE.get(meta.get("status", ""))
    return (
        prefix is not None
        and str(meta.get("GSI3PK", "")).startswith(prefix)
        and str(meta.get("lastMessageAt") or meta.get("GSI3SK", "")) < idle_before
        and int(meta.get("turnLockUntil", 0)) < time.time()
    )
