"""EventLog on the conversations table (key design in stream_log/items.py).

Every method runs in a worker thread (boto3 blocks). Request counts: open is two writes (the entry,
then the conversation's newest-turn item); append, report and request_cancel one each; get is one
GetItem, running two; events one Query (more past 1 MB). A running turn's report is a consistent
GetItem of its entry (a read unit, a fifth of a write's price: it only asks about a cancel); the last
report, at the turn's end, an UpdateItem that marks the entry ended.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from typing import Any

from rag_orchestrator.aws import AwsClients
from rag_orchestrator.config import Settings
from rag_orchestrator.conversations.items import from_attributes, pk, to_attributes
from rag_orchestrator.conversations.table import ConditionFailed, Table, in_worker_thread
from rag_orchestrator.errors import TurnEnded, TurnNotFound
from rag_orchestrator.stream_log import items as ti
from rag_orchestrator.stream_log.log import LoggedEvent, TurnEntry


class DynamoEventLog:
    def __init__(self, table: Table, *, clock: Callable[[], float] = time.time) -> None:
        self._table = table
        self._clock = clock

    @classmethod
    def from_settings(cls, settings: Settings, aws: AwsClients) -> DynamoEventLog:
        return cls(Table(aws.client("dynamodb"), settings.conversations_table or ""))

    @in_worker_thread
    def open(self, entry: TurnEntry) -> None:
        self._table.call(
            "put_item",
            Item=to_attributes(ti.entry_item(entry)),
            ConditionExpression="attribute_not_exists(PK)",
        )
        # Second, so the newest-turn item never names a turn not logged; a write unit, where a
        # transaction of both would bill four.
        self._table.call("put_item", Item=to_attributes(ti.latest_item(entry)))

    @in_worker_thread
    def append(self, entry: TurnEntry, events: Sequence[LoggedEvent]) -> None:
        self._table.call("put_item", Item=to_attributes(ti.batch_item(entry, list(events))))

    @in_worker_thread
    def report(self, entry: TurnEntry, last_seq: int, *, ended: bool = False) -> bool:
        key = ti.turn_key(entry.conversation_id, entry.turn_id)
        if not ended:
            return bool(self._item(key).get("cancelRequested"))
        try:
            response = self._table.call(
                "update_item",
                Key=to_attributes(key),
                UpdateExpression="SET lastSeq = :seq, #status = :ended",
                ConditionExpression="attribute_exists(PK)",
                ExpressionAttributeValues=to_attributes({":seq": last_seq, ":ended": "ended"}),
                ExpressionAttributeNames={"#status": "status"},
                ReturnValues="ALL_NEW",
            )
        except ConditionFailed:
            return False  # the entry is gone (expired): nobody can have asked
        return bool(from_attributes(response.get("Attributes") or {}).get("cancelRequested"))

    @in_worker_thread
    def request_cancel(self, conversation_id: str, turn_id: str, caller_id: str) -> None:
        try:
            self._table.call(
                "update_item",
                Key=to_attributes(ti.turn_key(conversation_id, turn_id)),
                UpdateExpression="SET cancelRequested = :yes",
                ConditionExpression="callerId = :caller AND #status = :running AND expiresAt > :now",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues=to_attributes(
                    {":yes": True, ":caller": caller_id, ":running": "running", ":now": int(self._clock())}
                ),
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ConditionFailed as refused:
            self._owned(refused.old(0), conversation_id, turn_id, caller_id)
            raise TurnEnded(turn_id) from None

    @in_worker_thread
    def get(self, conversation_id: str, turn_id: str, caller_id: str) -> TurnEntry:
        values = self._item(ti.turn_key(conversation_id, turn_id))
        return self._owned(values, conversation_id, turn_id, caller_id)

    @in_worker_thread
    def running(self, conversation_id: str, caller_id: str) -> TurnEntry | None:
        latest = self._item({"PK": pk(conversation_id), "SK": ti.LATEST})
        if latest.get("callerId") != caller_id or latest.get("expiresAt", 0) < self._clock():
            return None
        turn_id = str(latest["turnId"])
        values = self._item(ti.turn_key(conversation_id, turn_id))
        if values.get("status") != "running" or values.get("expiresAt", 0) < self._clock():
            return None
        return ti.entry_from_item(values, conversation_id, turn_id)

    def _item(self, key: dict[str, str]) -> dict[str, Any]:
        response = self._table.call("get_item", Key=to_attributes(key), ConsistentRead=True)
        return from_attributes(response.get("Item") or {})

    @in_worker_thread
    def events(self, conversation_id: str, turn_id: str, from_seq: int = 1) -> list[LoggedEvent]:
        params: dict[str, Any] = {
            "KeyConditionExpression": "PK = :pk AND SK BETWEEN :from AND :to",
            "ExpressionAttributeValues": to_attributes(
                {
                    ":pk": pk(conversation_id),
                    ":from": ti.batch_sort_key(turn_id, from_seq),
                    ":to": f"{ti.TURN_PREFIX}{turn_id}#~",  # '~' sorts after every digit
                }
            ),
            "ConsistentRead": True,
        }
        found: list[LoggedEvent] = []
        now = self._clock()
        while True:
            response = self._table.call("query", **params)
            for raw in response.get("Items", ()):
                values = from_attributes(raw)
                if values.get("expiresAt", now) >= now:
                    found += ti.events_of(values)
            if "LastEvaluatedKey" not in response:
                return found
            params["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    @in_worker_thread
    def discard(self, entry: TurnEntry) -> None:
        params: dict[str, Any] = {
            "KeyConditionExpression": "PK = :pk AND SK BETWEEN :entry AND :last",
            "ExpressionAttributeValues": to_attributes(
                {
                    ":pk": pk(entry.conversation_id),
                    ":entry": f"{ti.TURN_PREFIX}{entry.turn_id}",
                    ":last": f"{ti.TURN_PREFIX}{entry.turn_id}#~",  # no other turn's id sorts between
                }
            ),
            "ProjectionExpression": "PK, SK",
            "ConsistentRead": True,
        }
        while True:  # the entry (TURN#<id>) and its batches (TURN#<id>#<seq>), a page at a time
            response = self._table.call("query", **params)
            for key in response.get("Items", ()):
                self._table.call("delete_item", Key=key)
            if "LastEvaluatedKey" not in response:
                break
            params["ExclusiveStartKey"] = response["LastEvaluatedKey"]
        with suppress(ConditionFailed):  # the pointer names a later turn, or none
            self._table.call(
                "delete_item",
                Key=to_attributes({"PK": pk(entry.conversation_id), "SK": ti.LATEST}),
                ConditionExpression="turnId = :turn",
                ExpressionAttributeValues=to_attributes({":turn": entry.turn_id}),
            )

    def _owned(self, values: dict[str, Any], conversation_id: str, turn_id: str, caller_id: str) -> TurnEntry:
        if not values or values.get("callerId") != caller_id or values.get("expiresAt", 0) < self._clock():
            raise TurnNotFound(turn_id)
        return ti.entry_from_item(values, conversation_id, turn_id)
