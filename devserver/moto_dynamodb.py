"""DynamoDB on the moto server as a long-running local stack needs it: bounded in memory and in time.

Three things moto does that DynamoDB does not, and what the moto server (devserver/moto_serial.py)
does about them, all under its one request lock:

- Every model object moto creates is appended to a list kept for its dashboard
  (`moto.core.model_instances`), and a deep copy creates them too: the lists only grow (a few MB per
  transaction on a table of a few thousand items; the bench's server reached 24 GB). The server
  empties them after each request (`reset_model_data`; nothing but the dashboard reads them).
- TransactWriteItems deep-copies each table it writes, whole, to roll back a failed transaction:
  its time grows with the table (0.1–0.5 s a transaction at a few thousand items). Requests here run
  one at a time, so a transaction can only have changed the items it names: `save_touched_items`
  copies those instead and puts them back when it fails.
- A Query sorts every item of the table, with Python comparisons, before it keeps its partition's:
  its time grows with the table too. `query_partitions_only` hands a table Query the partition's
  items (a GSI Query every item, unsorted: it sorts what it keeps itself).
- Items whose TTL attribute has passed are never deleted. `sweep_expired` deletes them, as DynamoDB
  does within a few days of their time (here within `SWEEP_SECONDS`); times more than five years
  past are ignored, as DynamoDB ignores them.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable
from typing import Any

from moto.dynamodb import models
from moto.dynamodb.models import DynamoDBBackend, dynamodb_backends
from moto.dynamodb.models.dynamo_type import DynamoType, Item
from moto.dynamodb.models.table import Table

SWEEP_SECONDS = 30.0
IGNORED_AFTER_SECONDS = 5 * 365 * 86400  # DynamoDB does not delete items whose TTL is older than this

Saved = tuple[Table, DynamoType, DynamoType | None, Item | None]


def lighten() -> Callable[[], None]:
    """Both patches below; returns what puts moto's own way back."""
    steps = [save_touched_items(), query_partitions_only()]

    def undo() -> None:
        for step in reversed(steps):
            step()

    return undo


def save_touched_items() -> Callable[[], None]:
    """TransactWriteItems rolls back from copies of the items it names, not of its tables; returns
    what puts moto's own way back."""
    transact, module_copy = DynamoDBBackend.transact_write_items, models.copy

    def transact_write_items(self: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> None:
        saved = _touched(self, transact_items)
        try:
            transact(self, transact_items)
        except Exception:
            for table, hash_key, range_key, item in reversed(saved):
                _restore(table, hash_key, range_key, item)
            raise

    def undo() -> None:
        DynamoDBBackend.transact_write_items = transact  # type: ignore[method-assign]
        models.copy = module_copy

    DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]
    models.copy = _TablesUncopied  # type: ignore[assignment]  # the module's `copy.deepcopy(table)`
    return undo


class _TablesUncopied:
    """`copy` as moto's DynamoDB backend sees it: a table is the table itself (the transaction's own
    items are saved instead); anything else is deep-copied as before."""

    @staticmethod
    def deepcopy(value: Any, memo: dict[int, Any] | None = None) -> Any:
        return value if isinstance(value, Table) else copy.deepcopy(value, memo)


def _touched(backend: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> list[Saved]:
    saved: list[Saved] = []
    for entry in transact_items:
        kind, operation = next(iter(entry.items()))
        table = backend.tables.get(operation.get("TableName"))
        key = operation.get("Item" if kind == "Put" else "Key")
        if table is None or not isinstance(key, dict):
            continue  # moto refuses the transaction before it writes anything
        try:
            hash_key = DynamoType(key[table.hash_key_attr])
            range_key = DynamoType(key[table.range_key_attr]) if table.range_key_attr else None
            item = table.get_item(hash_key, range_key)
        except Exception:  # a malformed key: moto refuses it too
            continue
        saved.append((table, hash_key, range_key, copy.deepcopy(item)))
    return saved


def _restore(table: Table, hash_key: DynamoType, range_key: DynamoType | None, item: Item | None) -> None:
    if item is None:
        table.delete_item(hash_key, range_key)
    elif range_key is not None:
        table.items[hash_key][range_key] = item
    else:
        table.items[hash_key] = item


_query = threading.local()  # the table a Query of this thread runs on, and the partition it reads


def query_partitions_only() -> Callable[[], None]:
    """Table.query reads its partition's items only; returns what puts moto's own way back."""
    query, all_items = Table.query, Table.all_items

    def table_query(self: Table, hash_key: DynamoType | None, *args: Any, **kwargs: Any) -> Any:
        index = args[6] if len(args) > 6 else kwargs.get("index_name")
        # A string key only: numbers equal as DynamoDB compares them may differ as dictionary keys.
        partition = hash_key if index is None and hash_key is not None and hash_key.type == "S" else None
        _query.scope = (self, partition)
        try:
            return query(self, hash_key, *args, **kwargs)
        finally:
            _query.scope = None

    def table_items(self: Table) -> list[Item]:
        scope = getattr(_query, "scope", None)
        if scope is None or scope[0] is not self:
            return all_items(self)  # a Scan, an export: every item, in key order
        if scope[1] is None:
            return _items(self)
        found = self.items.get(scope[1])
        if found is None:
            return []
        return list(found.values()) if self.range_key_attr else [found]  # type: ignore[list-item]

    def undo() -> None:
        Table.query, Table.all_items = query, all_items  # type: ignore[method-assign]

    Table.query, Table.all_items = table_query, table_items  # type: ignore[method-assign]
    return undo


def sweep_expired(now: float) -> int:
    """Deletes the items of every TTL-enabled table whose TTL attribute (a Number of epoch seconds) has
    passed; how many."""
    removed = 0
    for accounts in list(dynamodb_backends.values()):
        for backend in list(accounts.values()):
            for table in list(backend.tables.values()):
                if table.ttl.get("TimeToLiveStatus") != "ENABLED":
                    continue
                attribute = table.ttl.get("AttributeName")
                expired = [item for item in _items(table) if _expired(item.attrs.get(attribute), now)]
                for item in expired:
                    table.delete_item(item.hash_key, item.range_key)
                removed += len(expired)
    return removed


def _items(table: Table) -> list[Item]:
    if table.range_key_attr:
        return [item for by_range in table.items.values() for item in by_range.values()]
    return list(table.items.values())


def _expired(value: DynamoType | None, now: float) -> bool:
    if value is None or value.type != "N":
        return False  # DynamoDB ignores a TTL attribute that is not a Number
    try:
        expires = float(value.value)
    except ValueError:
        return False
    return now - IGNORED_AFTER_SECONDS <= expires < now


def start_sweeper(lock: threading.Lock, seconds: float = SWEEP_SECONDS) -> Callable[[], None]:
    """A daemon thread sweeping every `seconds` under the server's request lock; returns its stop."""
    stop = threading.Event()

    def sweep() -> None:
        while not stop.wait(seconds):
            with lock:
                sweep_expired(time.time())

    threading.Thread(target=sweep, name="ttl-sweeper", daemon=True).start()
    return stop.set
