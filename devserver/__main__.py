"""`make dev`: moto server + Chroma server + sample knowledge base + demo tools (HTTP and MCP) + every
route and the chat page on PORT."""

from __future__ import annotations

import os
import signal
import sys
import time

from devserver import dev_env
from devserver.demo_mcp import use_demo_mcp
from devserver.demo_tools import use_demo_catalog
from devserver.stack import (
    ROOT,
    S3_EVENTS_PATH,
    apply_local_defaults,
    start_chroma,
    start_moto,
    use_assertion_key,
)


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


def main() -> int:
    env = apply_local_defaults()
    local = dev_env.local_dir()
    receiver = None
    if not os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):  # traces to .local/traces.jsonl, trees printed
        from devserver.traces import TraceReceiver, print_turns

        receiver = TraceReceiver(
            local / "traces.jsonl",
            on_spans=lambda new: print_turns(receiver.received() if receiver else [], new),
        )
        os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.url
    use_demo_catalog(env.get("PORT") or "8000", env)  # a bad PORT is named by the settings below
    use_demo_mcp(env.get("PORT") or "8000", env)
    sys.path.insert(0, str(ROOT / "layers" / "core"))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "layers" / "core"), str(ROOT)]))
    local = dev_env.local_dir()
    use_assertion_key(local / "assertion-key.pem", env)
    from rag_orchestrator.config import get_settings
    from rag_orchestrator.errors import ConfigError

    try:
        settings = get_settings()  # fail fast, naming the bad variable
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    services = []

    def stop(*_: object) -> None:
        dev_env.remove(local)
        for service in reversed(services):
            service.stop()

    signal.signal(signal.SIGTERM, _interrupt)
    started = time.perf_counter()
    try:
        events = f"http://127.0.0.1:{settings.port}{S3_EVENTS_PATH}"  # S3 -> AttachmentFunction, locally
        services.append(start_moto(env["AWS_ENDPOINT_URL"], local / "logs" / "moto.log", notify=events))
        from devserver.resources import create_resources

        create_resources(
            settings.conversations_table,
            [settings.transcripts_bucket, settings.documents_bucket, settings.attachments_bucket],
        )
        services.append(start_chroma(settings.chroma_url, local / "chroma", local / "logs" / "chroma.log"))
        from devserver.sample import ingest_sample_knowledge_base

        ingested = ingest_sample_knowledge_base(settings)
        print(f"stack ready in {time.perf_counter() - started:.1f}s; sample knowledge base: {ingested}")
        print(f"  moto (DynamoDB + S3)  {env['AWS_ENDPOINT_URL']}")
        print(f"  chroma                {settings.chroma_url}")
        print(f"  chat page             http://127.0.0.1:{settings.port}/")
        print(
            f"  api                   http://127.0.0.1:{settings.port}  (docs: /docs, health: /api/v1/agent/health)"
        )
        print(f"  tools                 {settings.tool_catalog_path}")
        if receiver is not None:
            print(
                f"  traces                {receiver.url}  (each turn's tree printed; {local / 'traces.jsonl'})"
            )
        print(f"  MCP                   the knowledge base: http://127.0.0.1:{settings.port}/mcp; tools from")
        print(
            f"                        the demo MCP server: http://127.0.0.1:{settings.port}/demo-mcp (docs/mcp.md)"
        )
        print(f"  make invoke reads     {dev_env.write(env, local)}")
        print("Ctrl-C stops everything.", flush=True)
        import uvicorn

        uvicorn.run(
            "devserver.app:build_app", factory=True, host="127.0.0.1", port=settings.port, log_level="info"
        )
    except KeyboardInterrupt:
        pass
    except Exception as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
