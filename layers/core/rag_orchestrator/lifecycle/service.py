"""What the routes ask of the lifecycle: start (or join) an erasure and hand it to its function; read one."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Protocol

from rag_orchestrator.domain.audit import actor_ref
from rag_orchestrator.domain.base import utcnow
from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.lifecycle.export import Exports
from rag_orchestrator.lifecycle.jobs import ErasureJobs, ErasureRequest, Started

# A joined erasure that made no progress for this long was stopped (Lambda's longest run is 15
# minutes): the request that joins it starts it again.
STALLED = timedelta(minutes=15)


class Dispatcher(Protocol):
    def dispatch(self, event: dict[str, Any]) -> None: ...


class Lifecycle:
    def __init__(self, jobs: ErasureJobs, exports: Exports, dispatcher: Dispatcher, actor_key: bytes) -> None:
        self._jobs = jobs
        self._exports = exports
        self.dispatcher = dispatcher
        self._actor_key = actor_key

    def erase(self, caller_id: str, requester: Caller) -> Started:
        """The caller's erasure, started, or joined when one runs; its function invoked either way
        unless the joined one is making progress."""
        started = self._jobs.start(
            ErasureRequest(
                caller_id,
                actor_ref(self._actor_key, caller_id),
                {"actorRef": actor_ref(self._actor_key, requester.caller_id), "roles": list(requester.roles)},
            )
        )
        if not started.joined or self._stalled(started.erasure_id):
            self.dispatcher.dispatch({"kind": "erasure", "erasureId": started.erasure_id})
        return started

    def erasure(self, erasure_id: str) -> dict[str, Any]:
        """The job without the plain caller id (ErasureNotFound, a 404, when there is none)."""
        return {k: v for k, v in self._jobs.job(erasure_id).items() if k != "callerId"}

    def export(self, caller_id: str) -> str:
        """A new export of the caller's data, handed to its function; its exportId."""
        export_id = self._exports.start(caller_id)
        self.dispatcher.dispatch({"kind": "export", "exportId": export_id})
        return export_id

    def export_status(self, export_id: str, caller_id: str) -> dict[str, Any]:
        return self._exports.status(export_id, caller_id)

    def _stalled(self, erasure_id: str) -> bool:
        job = self._jobs.job(erasure_id)
        moved = datetime.fromisoformat(str(job.get("updatedAt") or job["requestedAt"]).replace("Z", "+00:00"))
        return job.get("status") == "RUNNING" and utcnow() - moved > STALLED
