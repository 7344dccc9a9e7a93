"""Traces of a turn (docs/observability.md): the Tracer the composition root hands to the turn, the
tools, the searches and the store, and its do-nothing form.

With OTEL_EXPORTER_OTLP_ENDPOINT unset the tracer is NO_TRACER: no OpenTelemetry SDK is imported and
a span costs one call that returns a shared object. Set, the composition root (api/deps.py) loads
`otel_tracing` (the SDK and the OTLP/HTTP exporter); spans follow OpenTelemetry's GenAI semantic conventions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any, Literal, Protocol

Kind = Literal["internal", "client"]
Attributes = Mapping[str, str | int | float | bool | list[str]]

# The GenAI semantic conventions' attribute names, and the database ones a store request carries.
OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
CONVERSATION = "gen_ai.conversation.id"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
FINISH_REASONS = "gen_ai.response.finish_reasons"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
DATA_SOURCE = "gen_ai.data_source.id"
ERROR_TYPE = "error.type"


class Span(Protocol):
    def set(self, attributes: Attributes) -> None: ...

    def fail(self, error_type: str) -> None:
        """Mark the span failed, with a low-cardinality `error.type` (never an error's text)."""
        ...


class Tracer(Protocol):
    enabled: bool
    capture_content: bool  # OTEL_CAPTURE_CONTENT: prompts, answers, tool arguments and results in spans

    def span(
        self, name: str, attributes: Attributes, kind: Kind = "internal", start: int | None = None
    ) -> AbstractContextManager[Span]:
        """A span, current while the block runs (from `start`, ns since the epoch, when the work began
        before it); an exception escaping the block marks it failed."""
        ...

    def record(
        self,
        name: str,
        attributes: Attributes,
        timing: tuple[int, int],
        kind: Kind = "internal",
        failed: str | None = None,
    ) -> None:
        """A span of work that ran elsewhere (a task the turn started), from its start to its end in
        ns since the epoch, under the current span; marked failed with `failed` as its error.type."""
        ...

    def flush(self) -> None:
        """Export what has ended (a Lambda environment may be frozen once the invocation returns)."""
        ...


class _NoSpan:
    __slots__ = ()

    def __enter__(self) -> _NoSpan:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def set(self, attributes: Attributes) -> None:
        return None

    def fail(self, error_type: str) -> None:
        return None


class NoTracer:
    """Tracing off: every span is the same inert object."""

    enabled = False
    capture_content = False
    _span = _NoSpan()

    def span(
        self, name: str, attributes: Attributes, kind: Kind = "internal", start: int | None = None
    ) -> _NoSpan:
        return self._span

    def record(
        self,
        name: str,
        attributes: Attributes,
        timing: tuple[int, int],
        kind: Kind = "internal",
        failed: str | None = None,
    ) -> None:
        return None

    def flush(self) -> None:
        return None


NO_TRACER = NoTracer()


def as_json(value: Any) -> str:
    """Captured content as the JSON string an attribute holds."""
    return json.dumps(value, ensure_ascii=False, default=str)
