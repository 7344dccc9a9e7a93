"""The Tracer over OpenTelemetry's SDK, exporting in batches over OTLP/HTTP (docs/observability.md).

Imported only by `tracing.create_tracer` when OTEL_EXPORTER_OTLP_ENDPOINT is set. The provider is
this tracer's own, not the global one: nothing else in the process (FastAPI's native telemetry among
them) starts exporting because traces are on. Exceptions are not recorded as span events, whose text
could carry a prompt or an upstream's answer; a failed span gets `error.type` and an ERROR status.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Span as OtelSpan
from opentelemetry.trace import SpanKind, Status, StatusCode

from rag_orchestrator.observability import SERVICE
from rag_orchestrator.tracing import ERROR_TYPE, Attributes, Kind

KINDS = {"internal": SpanKind.INTERNAL, "client": SpanKind.CLIENT}
FLUSH_MILLIS = 2000  # a flush waits at most this long for the collector


def traces_url(endpoint: str) -> str:
    """OTEL_EXPORTER_OTLP_ENDPOINT is the collector's base address; traces go to its /v1/traces."""
    return endpoint.rstrip("/") + "/v1/traces"


class _Span:
    __slots__ = ("_span",)

    def __init__(self, span: OtelSpan) -> None:
        self._span = span

    def set(self, attributes: Attributes) -> None:
        self._span.set_attributes(attributes)

    def fail(self, error_type: str) -> None:
        self._span.set_attribute(ERROR_TYPE, error_type)
        self._span.set_status(Status(StatusCode.ERROR))


class OtelTracer:
    enabled = True

    def __init__(self, endpoint: str, *, capture_content: bool = False) -> None:
        self.capture_content = capture_content
        self._provider = TracerProvider(resource=Resource.create({SERVICE_NAME: SERVICE}))
        self._provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=traces_url(endpoint))))
        self._tracer = self._provider.get_tracer("rag_orchestrator")

    @contextmanager
    def span(
        self, name: str, attributes: Attributes, kind: Kind = "internal", start: int | None = None
    ) -> Iterator[_Span]:
        with self._tracer.start_as_current_span(
            name,
            kind=KINDS[kind],
            attributes=attributes,
            start_time=start,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            handle = _Span(span)
            try:
                yield handle
            except Exception as exc:
                handle.fail(type(exc).__name__)
                raise

    def record(
        self,
        name: str,
        attributes: Attributes,
        timing: tuple[int, int],
        kind: Kind = "internal",
        failed: str | None = None,
    ) -> None:
        span = self._tracer.start_span(name, kind=KINDS[kind], attributes=attributes, start_time=timing[0])
        if failed is not None:
            _Span(span).fail(failed)
        span.end(end_time=timing[1])

    def flush(self) -> None:
        self._provider.force_flush(FLUSH_MILLIS)

    def shutdown(self) -> None:
        self._provider.shutdown()
