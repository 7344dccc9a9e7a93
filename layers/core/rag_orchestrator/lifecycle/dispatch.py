"""Running a lifecycle job away from the request (docs/privacy.md): API Gateway gives a request 29 s.

In AWS the API function invokes LifecycleFunction asynchronously (LIFECYCLE_FUNCTION; Lambda retries a
failed run twice); without it (`make dev`, tests) a thread of this process runs the same handler code.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from rag_orchestrator.errors import StorageUnavailable
from rag_orchestrator.observability import logger

Job = Callable[[dict[str, Any]], object]  # run_lifecycle_event with its settings


class LambdaDispatcher:
    def __init__(self, client: Any, function_name: str) -> None:
        self._client = client
        self._function = function_name

    def dispatch(self, event: dict[str, Any]) -> None:
        try:
            self._client.invoke(
                FunctionName=self._function, InvocationType="Event", Payload=json.dumps(event).encode()
            )
        except Exception as exc:
            logger.error("lifecycle invoke failed", extra={"error_type": type(exc).__name__})
            raise StorageUnavailable("Could not start the job", retryable=True) from None


class ThreadDispatcher:
    """The job on a daemon thread of this process; `wait` joins what was started (tests, shutdown)."""

    def __init__(self, job: Job) -> None:
        self._job = job
        self._threads: list[threading.Thread] = []

    def dispatch(self, event: dict[str, Any]) -> None:
        thread = threading.Thread(target=self._run, args=(event,), name="lifecycle", daemon=True)
        self._threads.append(thread)
        thread.start()

    def wait(self, timeout: float = 60.0) -> None:
        for thread in list(self._threads):
            thread.join(timeout)
        self._threads = [t for t in self._threads if t.is_alive()]

    def _run(self, event: dict[str, Any]) -> None:
        try:
            self._job(event)
        except Exception:  # Lambda would retry; here the log says what went wrong, a new request re-runs it
            logger.exception("lifecycle job failed", extra={"kind": event.get("kind")})
