"""The model's transport, A/B: the hand-written HTTP/1.1 client (providers/http1.py) against httpx with
the body drained to its end after `[DONE]` (what keeps an httpx connection reusable).

Alternating, in one run, on the same fake LLM:
- CPU per streamed token, main thread, a whole turn through the OpenAI-compatible strategy (as
  `streaming`'s provider rows; the fake LLM in a process of its own);
- connections opened by 5 model calls (the fake LLM in this process counts what it accepts); httpx
  without the drain as well, for reference;
- first token, warm: `ChatClient.stream()` called -> its first content delta (server in its own process,
  5 tokens a reply), after a warm-up call on the same client;
- first token, cold: a fresh interpreter importing the strategy and making its first call.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from typing import Any

from bench.report import Section

TRANSPORTS = ("http1", "httpx")
LENGTHS = (100, 1000)


def _http_client(transport: str) -> Any:
    if transport == "http1":
        return None
    import httpx

    from rag_orchestrator import tls

    limits = httpx.Limits(max_connections=100, max_keepalive_connections=20)
    return httpx.AsyncClient(limits=limits, verify=tls.context())


def _settings(url: str) -> Any:
    from rag_orchestrator.config import load_settings

    return load_settings(
        model_strategy="openai_compatible",
        openai_compatible_base_url=url,
        openai_compatible_model="fake-model",
        openai_compatible_api_key="bench-key",
        auth_mode="dev",
        conversation_storage="memory",
    )


def _client(url: str, transport: str) -> Any:
    from rag_orchestrator.providers.strategies import chat_client

    return chat_client(
        _settings(url),
        provider="openai_compatible",
        base_url=url,
        api_key="bench-key",
        http_client=_http_client(transport),
        retry=None,
    )


PAYLOAD = {"model": "fake-model", "messages": [{"role": "user", "content": "Tell me"}], "stream": True}


async def _first_delta(client: Any) -> float:
    """Seconds from `stream()` to its first content delta; the rest of the answer read too."""
    started = time.perf_counter()
    first = None
    async for delta in client.stream(PAYLOAD):
        if first is None and delta.content:
            first = time.perf_counter() - started
    assert first is not None
    return first


async def _cpu(section: Section, repeats: int) -> None:
    from bench.llm_process import LLMProcess
    from bench.streaming import _orchestrator, _turn_cpu
    from rag_orchestrator.providers.strategies import create_strategy

    for tokens in LENGTHS:
        with LLMProcess(tokens) as server:
            orchestrators = {}
            for transport in TRANSPORTS:
                strategy = create_strategy(_settings(server.url), http_client=_http_client(transport))
                orchestrators[transport] = (strategy, _orchestrator(strategy))
            samples: dict[str, list[float]] = {t: [] for t in TRANSPORTS}
            for n in range(repeats + 1):
                for transport in TRANSPORTS if n % 2 else reversed(TRANSPORTS):
                    cpu = await _turn_cpu(orchestrators[transport][1], tokens) / tokens * 1e6
                    if n:
                        samples[transport].append(cpu)
            for transport in TRANSPORTS:
                await orchestrators[transport][0].aclose()
                section.add(
                    f"{transport}: CPU per token, {tokens} tokens, whole turn", "µs/token", samples[transport]
                )


async def _connections(section: Section) -> None:
    from rag_orchestrator.providers import transport as model_transport
    from tests.fakes.fake_llm import FakeLLM
    from tests.fakes.llm_script import text_reply

    finish = model_transport.finish

    async def not_drained(response: Any, seconds: float = 0.0) -> None:
        return None

    for name, transport, drained in (
        ("http1", "http1", True),
        ("httpx, body drained after [DONE]", "httpx", True),
        ("httpx, not drained (as before issue 22)", "httpx", False),
    ):
        with FakeLLM() as llm:
            llm.default = text_reply("word " * 20, chunks=20)
            client = _client(llm.url, transport)
            model_transport.finish = finish if drained else not_drained  # type: ignore[assignment]
            try:
                for _ in range(5):
                    await _first_delta(client)
            finally:
                model_transport.finish = finish  # type: ignore[assignment]
            opened = llm.connections
            await client.aclose()
            if client._http is not None:
                await client._http.aclose()
        section.add(f"{name}: connections opened by 5 calls", "connections", float(opened))


async def _warm(section: Section, runs: int) -> None:
    from bench.llm_process import LLMProcess

    with LLMProcess(5) as server:
        clients = {t: _client(server.url, t) for t in TRANSPORTS}
        samples: dict[str, list[float]] = {t: [] for t in TRANSPORTS}
        for n in range(runs + 10):
            for transport in TRANSPORTS if n % 2 else reversed(TRANSPORTS):
                seconds = await _first_delta(clients[transport])
                if n >= 10:
                    samples[transport].append(seconds * 1000)
        for client in clients.values():
            await client.aclose()
            if client._http is not None:
                await client._http.aclose()
    for transport in TRANSPORTS:
        section.add(f"{transport}: stream() -> first content delta, warm", "ms", samples[transport])


COLD = """
import asyncio, time
import app  # the chat-stream function's module, as uvicorn loads it
import httpx
try:  # what a first turn has done before its model call: the JWKS fetch (httpx, sync)
    httpx.get({url!r}, timeout=2)
except httpx.HTTPError:
    pass
from rag_orchestrator import tls
from rag_orchestrator.providers.strategies import chat_client
from rag_orchestrator.config import get_settings

PAYLOAD = {payload!r}

async def main():
    started = time.perf_counter()
    http = None if {transport!r} == "http1" else httpx.AsyncClient(verify=tls.verify({url!r}))
    client = chat_client(get_settings(), provider="openai_compatible", base_url={url!r}, api_key="k", http_client=http, retry=None)
    async for delta in client.stream(PAYLOAD):
        if delta.content:
            print(time.perf_counter() - started)
            break
asyncio.run(main())
"""


def _cold(section: Section, runs: int) -> None:
    """A fresh chat-stream function process in the Lambda-like layout (bytecode shipped, as in AWS):
    its app module imported, then the model client made and its first call's first delta."""
    from bench import layout as lambda_layout
    from bench.llm_process import LLMProcess
    from bench.stack import shared

    layout = lambda_layout.prepare()
    env = shared().stream_env(layout)
    samples: dict[str, list[float]] = {t: [] for t in TRANSPORTS}
    with LLMProcess(5) as server:
        for n in range(runs):
            for transport in TRANSPORTS if n % 2 else reversed(TRANSPORTS):
                code = COLD.format(payload=PAYLOAD, url=server.url, transport=transport)
                out = subprocess.run(
                    [sys.executable, "-S", "-c", code],
                    cwd=layout.function_dir("chat_stream"),
                    env=env,
                    capture_output=True,
                    text=True,
                    check=True,
                )
                samples[transport].append(float(out.stdout.split()[-1]) * 1000)
    for transport in TRANSPORTS:
        section.add(
            f"{transport}: fresh chat-stream process, app imported, one sync httpx GET, then client made + first call -> first delta",
            "ms",
            samples[transport],
        )


def run(quick: bool = False) -> Section:
    section = Section("transport", packages=["httpx", "httpcore", "h11", "anyio"])
    repeats = 3 if quick else 15

    async def main() -> None:
        await _cpu(section, repeats)
        await _connections(section)
        await _warm(section, 20 if quick else 200)

    asyncio.run(main())
    _cold(section, 3 if quick else 15)
    return section
