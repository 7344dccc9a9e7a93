"""DynamoDB (and S3) requests per turn and per window read, counted on the wire on a moto server.

A botocore `before-send` hook on the clients the store uses counts every HTTP request it sends,
retries included. The turn runs the real Orchestrator over the DynamoDB store with the scripted
strategy (no model on the wire), once answering directly and once after a tool call, with its
after-turn work (conversation memory indexing the turn in the bench stack's Chroma, and the automatic
title: the first turn of a conversation writes it, from the question since the script has no title reply).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections import Counter
from typing import Any

from bench.alternation import in_process
from bench.report import Section

GOAL = 4


class WireCounter:
    """Counts requests per `service.Operation` as botocore sends them."""

    def __init__(self, clients: dict[str, Any]) -> None:
        self.counts: Counter[str] = Counter()
        for client in clients.values():
            client.meta.events.register(
                f"before-send.{client.meta.service_model.endpoint_prefix}", self._sent
            )

    def _sent(self, event_name: str, **_: Any) -> None:
        _, service, operation = event_name.split(".", 2)
        self.counts[f"{service}.{operation}"] += 1

    def total(self, service: str) -> int:
        return sum(n for key, n in self.counts.items() if key.startswith(service + "."))

    def take(self) -> dict[str, int]:
        taken = dict(self.counts)
        self.counts.clear()
        return taken


def run(quick: bool = False) -> Section:
    return measure(quick)[0]


def measure(quick: bool = False) -> tuple[Section, dict[str, dict[str, float]]]:
    """The section, and per kind of turn its requests and request units (the last turn's; bench/cost.py)."""
    from bench.capacity import CapacityMeter
    from bench.loop import ANSWER, LookupTool
    from bench.stack import shared
    from rag_orchestrator.api.deps import process_aws
    from rag_orchestrator.conversations.factory import create_store
    from rag_orchestrator.domain.callers import Caller
    from rag_orchestrator.domain.conversations import Conversation
    from rag_orchestrator.loop.request import TurnRequest
    from rag_orchestrator.loop.titles import AutoTitle
    from rag_orchestrator.loop.turn_memory import TurnMemory
    from rag_orchestrator.retrieval.embedders import create_embedder
    from rag_orchestrator.retrieval.fragments import create_fragment_index
    from tests.fakes.scripted import ScriptedStrategy, answer, call, scripted_orchestrator, tool_calls

    aws = process_aws()

    section = Section("dynamodb", packages=["boto3", "botocore", "moto"])
    stack = shared()
    settings = stack.settings(loop_initial_rag=False)
    aws.reset()
    store = create_store(settings, aws)
    memory = create_fragment_index(settings, create_embedder(settings))
    wire = WireCounter({"dynamodb": aws.client("dynamodb"), "s3": aws.client("s3")})
    meter = CapacityMeter(aws.client("dynamodb"))
    caller = Caller("bench")
    turns = 3 if quick else 10
    scripts = {
        "turn without a tool call": [answer(ANSWER)],
        "turn with one tool call": [tool_calls(call("lookup", '{"query": "tests"}')), answer(ANSWER)],
    }
    operations: dict[str, dict[str, int]] = {}
    transaction_items: dict[str, list[int]] = {}
    usage: dict[str, dict[str, float]] = {}

    async def one_turn(script: list[Any], conversation_id: str) -> dict[str, int]:
        strategy = ScriptedStrategy(script)
        orchestrator = scripted_orchestrator(
            strategy,
            store=store,
            tools=[LookupTool()],
            settings=settings,
            # What a deployed turn runs after it (AUTO_TITLE is on by default): memory and the title.
            after_turn=[TurnMemory(memory, store), AutoTitle(store, strategy)],
        )
        wire.take()
        meter.take()
        meter.items_in_transactions.clear()
        turn = await orchestrator.begin(
            TurnRequest(conversation_id=conversation_id, caller=caller, message="Hi")
        )
        events = [event async for event in turn.events()]
        if events[-1].type != "Completed":
            raise RuntimeError(f"turn failed: {events[-1]}")
        await turn.after()
        return wire.take()

    async def main() -> str:
        for name, script in scripts.items():
            counts: list[float] = []
            s3: list[float] = []
            seconds: list[float] = []
            conversation = (await store.create(Conversation(caller_id=caller.caller_id))).conversation_id
            for _ in range(turns):  # later turns have a window to read
                started = time.perf_counter()
                taken = await one_turn(script, conversation)
                seconds.append(time.perf_counter() - started)
                counts.append(sum(n for key, n in taken.items() if key.startswith("dynamodb.")))
                s3.append(sum(n for key, n in taken.items() if key.startswith("s3.")))
                operations[name] = taken
                units = meter.take()
                usage[name] = {
                    "dynamodb": counts[-1],
                    "s3": s3[-1],
                    "seconds": statistics.median(seconds),
                } | units
                transaction_items[name] = list(meter.items_in_transactions)
            figure = section.add(f"{name}: DynamoDB requests", "requests", counts)
            figure.goal, figure.met = f"<= {GOAL} per turn", max(counts) <= GOAL
            section.add(f"{name}: S3 requests", "requests", s3)
            section.add(f"{name}: write request units (last turn)", "WRU", usage[name]["write"])
            section.add(f"{name}: read request units (last turn)", "RRU", usage[name]["read"])
            section.add(
                f"{name}: whole turn, after-turn work included (no model wait)",
                "ms",
                [s * 1000 for s in seconds],
            )
        windows: list[float] = []
        for _ in range(turns):
            wire.take()
            await store.window(conversation, settings.conversation_rolling_window)
            windows.append(wire.total("dynamodb"))
        operations["window read"] = wire.take()
        section.add("window read (CONVERSATION_ROLLING_WINDOW messages)", "requests", windows)
        return conversation

    conversation = asyncio.run(main())
    # Proof that the after-turn work ran: the turns' fragments are in conversation memory.
    section.details["fragments indexed (caller bench)"] = memory.store.count(
        where={"callerId": caller.caller_id}
    )
    section.details["operations of the last of each"] = {
        name: ", ".join(f"{key} x{n}" for key, n in sorted(taken.items())) or "none"
        for name, taken in operations.items()
    }
    section.details["items per transaction of the last of each"] = transaction_items
    section.details["META item size (bytes; an Update is billed on it)"] = _meta_size(settings, conversation)
    _client_cpu(section, aws.client("dynamodb"), settings, conversation, 30 if quick else 300)
    aws.reset()
    return section, usage


def _client_cpu(section: Section, client: Any, settings: Any, conversation_id: str, runs: int) -> None:
    """A GetItem's client CPU on the pooled connections (http_pool.py) and through httpx as before,
    alternating on the same moto server and item."""
    import copy

    import httpx

    from rag_orchestrator.aws_json import JsonClient
    from rag_orchestrator.conversations.meta_update import meta_key
    from rag_orchestrator.http_pool import wire_for

    if not isinstance(client, JsonClient):  # boto3's: no credentials in the environment
        return
    before = copy.copy(client)
    before._wire = wire_for(client.url, "", {}, httpx.HTTPTransport())
    key = meta_key(conversation_id)
    ours, theirs = (
        lambda _, each=each: each.get_item(TableName=settings.conversations_table, Key=key)
        for each in (client, before)
    )
    labels = (
        "a GetItem's client CPU, pooled http.client",
        "a GetItem's client CPU, through httpx (as before)",
    )
    in_process(section, labels, (ours, theirs), runs)  # 10 rounds first: connections open, code warm


def _meta_size(settings: Any, conversation_id: str) -> int:
    from bench.turns import item_size
    from rag_orchestrator.api.deps import process_aws
    from rag_orchestrator.conversations.meta_update import meta_key

    aws = process_aws()

    found = aws.client("dynamodb").get_item(
        TableName=settings.conversations_table, Key=meta_key(conversation_id)
    )
    return item_size(found["Item"])
