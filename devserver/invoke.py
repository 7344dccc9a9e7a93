"""`make invoke FN=<function> EVENT=<file>`: run a function's handler in-process against the local stack:
the running `make dev`'s, on whatever ports it took (devserver/dev_env.py), else the default one."""

from __future__ import annotations

import asyncio
import base64
import importlib.util
import json
import os
import sys
import time
import uuid
from dataclasses import dataclass, field

from devserver import dev_env
from devserver.event_setup import prepare
from devserver.stack import ROOT, apply_local_defaults

FUNCTIONS = ("api", "chat_stream", "archive", "ingest", "attachments", "lifecycle")


@dataclass
class LambdaContext:
    """The attributes of Lambda's context object that handlers and Powertools read."""

    function_name: str
    timeout_seconds: int = 900
    memory_limit_in_mb: int = 1024
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    _deadline: float = field(default=0.0, repr=False)

    def __post_init__(self) -> None:
        self.function_version = "$LATEST"
        self.invoked_function_arn = f"arn:aws:lambda:us-east-1:000000000000:function:{self.function_name}"
        self.log_group_name = f"/aws/lambda/{self.function_name}"
        self.log_stream_name = "local"
        self._deadline = time.monotonic() + self.timeout_seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def load_handler_module(name: str):
    path = ROOT / "functions" / name / "app.py"
    spec = importlib.util.spec_from_file_location(f"function_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def adapter_headers(event: dict, context: LambdaContext) -> dict[str, str]:
    """The two headers the Lambda Web Adapter adds to each request it forwards to the app."""
    lambda_context = {
        "request_id": context.aws_request_id,
        "deadline": int(time.time() * 1000) + context.get_remaining_time_in_millis(),
        "invoked_function_arn": context.invoked_function_arn,
        "xray_trace_id": None,
        "env_config": {
            "function_name": context.function_name,
            "memory": context.memory_limit_in_mb,
            "version": context.function_version,
            "log_stream": context.log_stream_name,
            "log_group": context.log_group_name,
        },
    }
    return {
        "x-amzn-request-context": json.dumps(event.get("requestContext") or {}),
        "x-amzn-lambda-context": json.dumps(lambda_context),
    }


async def _stream(app, event: dict, context: LambdaContext) -> None:
    import httpx

    http = event["requestContext"]["http"]
    body = event.get("body") or ""
    content = base64.b64decode(body) if event.get("isBase64Encoded") else body.encode()
    transport = httpx.ASGITransport(app=app)
    async with (
        httpx.AsyncClient(transport=transport, base_url="http://function-url") as client,
        client.stream(
            http["method"],
            event.get("rawPath", http.get("path")),
            headers={**(event.get("headers") or {}), **adapter_headers(event, context)},
            content=content,
            params=event.get("rawQueryString") or None,
        ) as response,
    ):
        print(f"HTTP {response.status_code}", file=sys.stderr)
        async for chunk in response.aiter_text():
            sys.stdout.write(chunk)
            sys.stdout.flush()


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in FUNCTIONS:
        print(f"usage: python -m devserver.invoke <{'|'.join(FUNCTIONS)}> <event.json>", file=sys.stderr)
        return 2
    name, event_path = argv
    running = dev_env.read(dev_env.local_dir())
    for key, value in running.items():
        os.environ.setdefault(key, value)  # what you export still wins, as for `make dev`
    if running:
        print(f"against the running make dev on port {os.environ.get('PORT', '8000')}", file=sys.stderr)
    apply_local_defaults()
    sys.path[:0] = [str(ROOT / "layers" / "core"), str(ROOT / "functions" / name)]
    event = json.loads((ROOT / event_path).read_text())  # an absolute path replaces ROOT
    event = prepare(event)  # the sample's object uploaded, its conversation there
    module = load_handler_module(name)
    context = LambdaContext(function_name=f"rag-orchestrator-{name}")
    if name == "chat_stream":
        asyncio.run(_stream(module.app, event, context))
        return 0
    result = module.handler(event, context)
    print(json.dumps(result, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
