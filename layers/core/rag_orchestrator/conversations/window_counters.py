"""Fixed-window counters on the conversations table, for limits that must hold across every function
instance: guest tokens minted per source address per hour (api/guest_limits.py).

    PK=RATE#<name>#<key>  SK=WINDOW#<window>   hits (atomic ADD), expiresAt (TTL)

A hit is one conditional UpdateItem: counted while the window is under its limit, refused at it. The
in-process counter does the same under a lock, for CONVERSATION_STORAGE=memory.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Protocol

from rag_orchestrator.aws import AwsClients
from rag_orchestrator.config import Settings
from rag_orchestrator.conversations import items as it
from rag_orchestrator.conversations.table import ConditionFailed, Table


class WindowCounter(Protocol):
    async def hit(self, name: str, key: str, window: str, limit: int, expires_at: int) -> bool:
        """Count one hit of `key` in `window`; False (nothing counted) when it has `limit` already."""
        ...


class DynamoWindowCounter:
    def __init__(self, table: Table) -> None:
        self._table = table

    async def hit(self, name: str, key: str, window: str, limit: int, expires_at: int) -> bool:
        return await asyncio.to_thread(self._hit, name, key, window, limit, expires_at)

    def _hit(self, name: str, key: str, window: str, limit: int, expires_at: int) -> bool:
        try:
            self._table.call(
                "update_item",
                Key=it.to_attributes({"PK": f"RATE#{name}#{key}", "SK": f"WINDOW#{window}"}),
                UpdateExpression="ADD hits :one SET expiresAt = :e, entity = :rate",
                ConditionExpression="attribute_not_exists(hits) OR hits < :limit",
                ExpressionAttributeValues=it.to_attributes(
                    {":one": 1, ":e": expires_at, ":rate": "rate", ":limit": limit}
                ),
            )
        except ConditionFailed:
            return False
        return True


class InProcessWindowCounter:
    def __init__(self) -> None:
        self._window = ""
        self._hits: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    async def hit(self, name: str, key: str, window: str, limit: int, expires_at: int) -> bool:
        with self._lock:
            if window != self._window:  # only the current window matters
                self._window, self._hits = window, {}
            count = self._hits.get((name, key), 0)
            if count >= limit:
                return False
            self._hits[(name, key)] = count + 1
            return True


def create_window_counter(settings: Settings, aws: AwsClients) -> WindowCounter:
    """On the table CONVERSATION_STORAGE uses, through the composition root's clients, or in this process."""
    if settings.conversation_storage == "memory":
        return InProcessWindowCounter()
    return DynamoWindowCounter(Table(aws.client("dynamodb"), settings.conversations_table or ""))
