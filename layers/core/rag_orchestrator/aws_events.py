"""botocore's client events for the clients without boto3 (aws_json.py, aws_s3.py): what measures and
tests register on a boto3 client's `meta.events` observes these clients the same way.

A call emits `provide-client-params` (before its request is built), `before-call`, `before-send` (once
per attempt) and `after-call`, each named `<event>.<service>.<Operation>`; a handler registered for a
shorter name (`before-send`, `before-call.dynamodb`) hears every call under it, as botocore's do.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Operation:
    name: str  # as botocore's OperationModel names it: `PutItem`


class Events:
    """The handlers registered by event name; `emit` calls those of the name and of each shorter one."""

    def __init__(self) -> None:
        self._handlers: dict[str, list[Callable[..., Any]]] = {}

    def register(self, event_name: str, handler: Callable[..., Any]) -> None:
        self._handlers.setdefault(event_name, []).append(handler)

    def unregister(self, event_name: str, handler: Callable[..., Any]) -> None:
        found = self._handlers.get(event_name, [])
        if handler in found:
            found.remove(handler)
        if not found:
            self._handlers.pop(event_name, None)  # so that `heard` is whether any name has a handler

    @property
    def heard(self) -> bool:
        """Whether any handler is registered (a call emits nothing otherwise)."""
        return bool(self._handlers)

    def emit(self, event_name: str, **kwargs: Any) -> None:
        if not self.heard:
            return
        parts = event_name.split(".")
        for depth in range(len(parts), 0, -1):
            for handler in list(self._handlers.get(".".join(parts[:depth]), ())):
                handler(event_name=event_name, **kwargs)


@dataclass(frozen=True)
class ServiceModel:
    service_name: str
    endpoint_prefix: str


class Meta:
    """What a boto3 client's `meta` tells of it: its events, service, region and endpoint."""

    def __init__(self, service: str, region: str, url: str) -> None:
        self.events = Events()
        self.service_model = ServiceModel(service, service)
        self.region_name = region
        self.endpoint_url = url.rstrip("/")


class Observed:
    """One call's events: `provide-client-params` when made, then `before` (`before-call`), `sending`
    before each attempt and `after` with what the call returns or its error's response."""

    def __init__(self, events: Events, service_event: str, operation: str, params: dict[str, Any]) -> None:
        self.events, self.model, self.named = events, Operation(operation), f"{service_event}.{operation}"
        events.emit(f"provide-client-params.{self.named}", params=params, model=self.model, context={})

    def before(
        self, method: str, url: str, path: str, headers: Mapping[str, str], body: bytes | None
    ) -> None:
        """`before-call`, with the request as botocore gives it (made only when a handler listens)."""
        if self.events.heard:
            request = {
                "url_path": path,
                "query_string": "",
                "method": method,
                "headers": dict(headers),
                "body": body or b"",
                "url": url,
                "context": {},
            }
            self.events.emit(
                f"before-call.{self.named}", params=request, model=self.model, context={}, request_signer=None
            )

    def sending(self) -> None:
        self.events.emit(f"before-send.{self.named}", request=None)

    def after(self, response: Any, parsed: dict[str, Any]) -> None:
        self.events.emit(
            f"after-call.{self.named}", http_response=response, parsed=parsed, model=self.model, context={}
        )
