"""The DynamoDB calls the store makes, with botocore's errors turned into the package's.

    ConditionalCheckFailed, a cancelled transaction   -> ConditionFailed (the store decides what it means)
    ValidationException (or a ValidationError reason)  -> BadRequest (400): the data, not the service
    throttling codes                                   -> StorageUnavailable (503, Retry-After), "throttled"
    anything else, or DynamoDB unreachable             -> StorageUnavailable (503, Retry-After)

DynamoDB's own message stays in the log: it may quote the data of the request.
"""

from __future__ import annotations

import asyncio
import functools
import random
import time
from collections.abc import Callable, Coroutine, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, Concatenate

from botocore.exceptions import BotoCoreError, ClientError

from rag_orchestrator import aws
from rag_orchestrator.conversations.items import from_attributes, to_attributes
from rag_orchestrator.errors import BadRequest, RagError, StorageUnavailable
from rag_orchestrator.observability import logger, redacted
from rag_orchestrator.tracing import NO_TRACER, Tracer

TRANSACT_MAX_ITEMS = 100
TRANSACT_MAX_BYTES = 3_500_000  # under the 4 MB a transaction may carry, leaving room for overhead
BATCH_SIZE = 25
ATTEMPTS = 5
MAX_QUERY_ROUNDS = 5  # filtered listings read at most this many stretches for one page
REFUSED = "The conversation store refused the request's data as invalid"
THROTTLED = "The conversation store (DynamoDB) is throttling requests"
FAILED = "The conversation store (DynamoDB) failed"
UNREACHABLE = "The conversation store (DynamoDB) could not be reached"
_THROTTLED_REASONS = frozenset({"ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded"})


class ConditionFailed(Exception):
    """A condition refused the write; `reasons` are a transaction's, one per item."""

    def __init__(self, reasons: Sequence[dict[str, Any]] = (), item: dict[str, Any] | None = None) -> None:
        super().__init__("condition failed")
        self.reasons = [dict(r) for r in reasons]
        self.item = item

    def code(self, index: int) -> str | None:
        return self.reasons[index].get("Code") if index < len(self.reasons) else None

    def old(self, index: int) -> dict[str, Any]:
        """The item as it was when item `index` failed its condition (ReturnValuesOnConditionCheckFailure)."""
        item = self.reasons[index].get("Item") if index < len(self.reasons) else self.item
        return from_attributes(item or {})

    @property
    def only_conflicts(self) -> bool:
        codes = {r.get("Code") for r in self.reasons} - {"None", None}
        return codes == {"TransactionConflict"}


def failure_of(code: str, reasons: AbstractSet[str | None] = frozenset()) -> RagError | None:
    """The error a DynamoDB error code (and a cancelled transaction's reasons) means for a client;
    None for a refused condition, which is the store's to interpret."""
    if code == "ValidationException" or "ValidationError" in reasons:
        return BadRequest(REFUSED)
    if code in aws.THROTTLING_CODES or reasons & _THROTTLED_REASONS:
        return StorageUnavailable(THROTTLED)
    if code in ("ConditionalCheckFailedException", "TransactionCanceledException"):
        return None
    return StorageUnavailable(FAILED)


def in_worker_thread[S, **P, T](
    method: Callable[Concatenate[S, P], T],
) -> Callable[Concatenate[S, P], Coroutine[Any, Any, T]]:
    """A blocking method (boto3 blocks) as a coroutine that runs it in a worker thread: the event loop
    never waits."""

    @functools.wraps(method)
    async def run(self: S, *args: P.args, **kwargs: P.kwargs) -> T:
        return await asyncio.to_thread(method, self, *args, **kwargs)

    return run


def request_span(operation: str, table: str) -> tuple[str, dict[str, str]]:
    """A DynamoDB request's span: `PutItem <table>`, with the database conventions' attributes."""
    name = "".join(part.title() for part in operation.split("_"))
    attributes = {"db.system.name": "aws.dynamodb", "db.operation.name": name, "db.collection.name": table}
    return f"{name} {table}", attributes


def _pause(attempt: int) -> None:
    time.sleep(random.uniform(0, 0.05 * 2**attempt))


class Table:
    def __init__(self, client: Any, name: str, tracer: Tracer = NO_TRACER) -> None:
        self.client = client
        self.name = name
        self._tracer = tracer

    def call(self, operation: str, **params: Any) -> dict[str, Any]:
        """One request on this table; a refused condition raises ConditionFailed."""
        return self._invoke(operation, TableName=self.name, **params)

    def transact(self, actions: list[dict[str, Any]]) -> None:
        """One TransactWriteItems; retried only when cancelled by concurrent transactions alone."""
        for action in actions:
            next(iter(action.values()))["TableName"] = self.name
        for attempt in range(ATTEMPTS):
            try:
                self._invoke("transact_write_items", TransactItems=actions)
                return
            except ConditionFailed as failed:
                if not failed.only_conflicts or attempt == ATTEMPTS - 1:
                    raise
                _pause(attempt)

    def _invoke(self, operation: str, **params: Any) -> dict[str, Any]:
        if self._tracer.enabled:
            with self._tracer.span(*request_span(operation, self.name), "client"):
                return self._request(operation, params)
        return self._request(operation, params)

    def _request(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        try:
            return getattr(self.client, operation)(**params)
        except ClientError as exc:
            code = aws.error_code(exc)
            reasons = exc.response.get("CancellationReasons") or ()
            refusal = failure_of(code, {r.get("Code") for r in reasons})
            if refusal is None:
                raise ConditionFailed(reasons, exc.response.get("Item")) from None
            log = logger.warning if refusal.status_code < 500 else logger.error
            log(
                "dynamodb call failed",
                extra={"operation": operation, "code": code, "detail": redacted(str(exc))},
            )
            raise refusal from None
        except BotoCoreError as exc:
            logger.error(
                "dynamodb unreachable", extra={"operation": operation, "error_type": type(exc).__name__}
            )
            raise StorageUnavailable(UNREACHABLE) from None

    def batch_get(self, keys: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """Items by key (at most 100), read consistently, in one BatchGetItem unless DynamoDB leaves
        some unprocessed; missing items are simply absent."""
        found: list[dict[str, Any]] = []
        pending: dict[str, Any] = {self.name: {"Keys": list(keys), "ConsistentRead": True}}
        for attempt in range(ATTEMPTS):
            response = self._invoke("batch_get_item", RequestItems=pending)
            found += [from_attributes(item) for item in response.get("Responses", {}).get(self.name, ())]
            pending = response.get("UnprocessedKeys") or {}
            if not pending:
                return found
            _pause(attempt)
        raise StorageUnavailable("Could not read every item")

    def batch_put(self, items: Sequence[dict[str, Any]]) -> None:
        """BatchWriteItem in chunks of 25, retrying what DynamoDB leaves unprocessed."""
        self._batch_write([{"PutRequest": {"Item": i}} for i in items])

    def batch_delete(self, keys: Sequence[dict[str, Any]]) -> None:
        """Delete items by key, like batch_put."""
        self._batch_write([{"DeleteRequest": {"Key": k}} for k in keys])

    def _batch_write(self, requests: list[dict[str, Any]]) -> None:
        for start in range(0, len(requests), BATCH_SIZE):
            pending = {self.name: requests[start : start + BATCH_SIZE]}
            for attempt in range(ATTEMPTS):
                response = self._batch_write_once(pending)
                pending = response.get("UnprocessedItems") or {}
                if not pending:
                    break
                _pause(attempt)
            else:
                raise StorageUnavailable("Could not write every item")

    def _batch_write_once(self, pending: dict[str, Any]) -> dict[str, Any]:
        try:
            return self.client.batch_write_item(RequestItems=pending)
        except ClientError as exc:
            code = aws.error_code(exc)
            logger.error("dynamodb batch write failed", extra={"code": code, "detail": redacted(str(exc))})
            raise failure_of(code) or StorageUnavailable(FAILED) from None
        except BotoCoreError:
            raise StorageUnavailable(UNREACHABLE) from None

    def query_page(
        self, params: dict[str, Any], limit: int, start: dict[str, Any] | None, key_names: Sequence[str]
    ) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        """Up to `limit` items and the position after them (None at the end).

        Reads one item more than asked, so the last page never hands out a cursor to nothing.
        """
        found: list[dict[str, Any]] = []
        for _ in range(MAX_QUERY_ROUNDS):
            if start:
                params["ExclusiveStartKey"] = to_attributes(start)
            response = self.call("query", **params, Limit=limit + 1 - len(found))
            found += [from_attributes(item) for item in response.get("Items", ())]
            last = response.get("LastEvaluatedKey")
            start = from_attributes(last) if last else None
            if len(found) > limit or start is None:
                break
        if len(found) > limit:
            found = found[:limit]
            return found, {name: found[-1][name] for name in key_names}
        return found, start
