"""Every third-wave feature on the bill: what each adds to a streamed turn, warm — the chat-stream
process's CPU per turn and the latency of the first token — beside a budget.

Warm chat-stream processes, one per configuration, take turns in alternation (bench/alternation.py) on
the bench stack (moto, Chroma, the fake LLM, the JWKS server; AUTH_MODE=jwt). Each configuration is
"everything off" (MEMORY_ENABLED=false, RETRIEVAL_MODE=dense, RERANKER=none, no tools, no MCP server, no
tracing) with one feature on, and each row compares two configurations:

- hybrid search (hybrid over dense), the local reranker (hybrid + local over hybrid), memory recall
  (recall in the initial search, indexing after the turn) and tracing (OTLP/HTTP export to a receiver on
  loopback, devserver/traces.py): a plain turn in a new conversation, eval/'s questions in rotation;
- the caller assertion: a turn calling one HTTP tool (the fake tool API) with `identity: assertion`
  over the same with `identity: none`; an MCP tool call: the same turn calling the order service's
  lookup over MCP (bench/mcp.py's server, a process of its own) over the HTTP tool;
- compaction: the second turn of a conversation of long messages, whose history then passes
  CONTEXT_TOKEN_BUDGET=1000 and folds after the turn (one summary call to the model), over the same turn
  under a budget it fits;
- defaults on, in all: the default configuration (memory, hybrid, the local reranker, compaction at its
  budget) over everything off.

The knowledge base is the retrieval section's 2,000 chunks (bench/retrieval.py), in a collection of its
own. Condensing follow-ups and automatic titles are off everywhere: each is a model call of its own
(`titles` measures the title), not a feature of this wave.

Added first-token latency: the median of the paired differences, round by round, of request sent ->
first ResponseChunk. Added CPU: the difference of the two processes' CPU (utime + stime) from before
their first measured turn to after their last, per turn: background work (the span exporter) included.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import layout as lambda_layout
from bench import stack as local
from bench.alternation import alternate
from bench.memory_use import cpu_seconds
from bench.report import ROOT, Section

COLLECTION = "bench-bill"
ANSWER = "Run make test; it starts a moto server and a Chroma server."
TOOL_QUESTION = "What is the status of my order A-1001?"
ORDER = {"orderId": "A-1001"}
KEY_PARAM = "/rag-orchestrator/bench-assertion-key"
SUMMARY_PROMPT = "Update the running summary"
LONG_CHARS = 2400  # two such turns pass a 1,000-token budget; one does not
OFF = {"MEMORY_ENABLED": "false", "RETRIEVAL_MODE": "dense", "RERANKER": "none"}
EVERYWHERE = {"CONDENSE_FOLLOW_UPS": "false", "CHROMA_COLLECTION": COLLECTION}


@dataclass(frozen=True)
class Line:
    """A row of the bill: `on` over `off`, and the budgets of what it adds (first token warm, CPU)."""

    feature: str
    on: str
    off: str
    first_ms: float
    cpu_ms: float


# The defaults' 5 ms of first token and 5 ms of CPU (a fifth of a turn's ~25 ms) shared among the
# default-on features; the opt-in ones get what one request or one signature should cost.
LINES = (
    Line("hybrid search (BM25 beside dense, fused)", "hybrid", "off", 2.0, 1.5),
    Line("local reranker (20 candidates)", "reranked", "hybrid", 1.5, 2.0),
    Line("memory recall (+ indexing after the turn)", "memory", "off", 1.5, 1.5),
    Line("caller assertion (one HTTP tool call)", "assertion", "tool", 1.0, 0.5),
    Line("MCP tool call (over the same HTTP tool call)", "mcp", "tool", 5.0, 3.0),
    Line("compaction (a turn that folds)", "compaction", "no compaction", 1.0, 3.0),
    Line("tracing on (OTLP export)", "tracing", "off", 1.0, 3.0),
    Line("defaults on, in all", "defaults", "off", 5.0, 5.0),
)


def configurations(
    work: Path, tool_api: str, mcp_url: str, traces_url: str
) -> dict[str, tuple[str, dict[str, str]]]:
    """Each configuration's kind of turn and its settings over everything off."""
    catalogs = {identity: _catalog(work, tool_api, identity) for identity in ("none", "assertion")}
    mcp = json.dumps({"servers": [{"name": "orders", "url": mcp_url, "identity": "none"}]})
    return {
        "off": ("plain", OFF),
        "hybrid": ("plain", OFF | {"RETRIEVAL_MODE": "hybrid"}),
        "reranked": ("plain", OFF | {"RETRIEVAL_MODE": "hybrid", "RERANKER": "local"}),
        "memory": ("plain", OFF | {"MEMORY_ENABLED": "true"}),
        "tracing": ("plain", OFF | {"OTEL_EXPORTER_OTLP_ENDPOINT": traces_url}),
        "defaults": ("plain", {}),
        "tool": ("tool", OFF | {"TOOL_CATALOG_PATH": catalogs["none"]}),
        "assertion": (
            "tool",
            OFF | {"TOOL_CATALOG_PATH": catalogs["assertion"], "ASSERTION_PRIVATE_KEY_PARAM": KEY_PARAM},
        ),
        "mcp": ("mcp", OFF | {"MCP_SERVERS": mcp}),
        "compaction": ("compaction", OFF | {"CONTEXT_TOKEN_BUDGET": "1000"}),
        "no compaction": ("compaction", OFF | {"CONTEXT_TOKEN_BUDGET": "1000000"}),
    }


def _catalog(work: Path, tool_api: str, identity: str) -> str:
    entry = {
        "name": "get_order_status",
        "description": "Look up the status and delivery estimate of one order",
        "inputSchema": {
            "type": "object",
            "properties": {"orderId": {"type": "string"}},
            "required": ["orderId"],
        },
        "http": {"method": "GET", "url": f"{tool_api}/orders/{{orderId}}", "identity": identity},
    }
    path = work / f"tools-{identity}.yaml"
    path.write_text(json.dumps({"tools": [entry]}))  # JSON is YAML
    return str(path)


class Turns:
    """The turn of each configuration's kind, checked, and each process's CPU over the measured turns."""

    def __init__(
        self, stack: local.LocalStack, api: Any, kinds: dict[str, str], questions: list[str], warmup: int
    ) -> None:
        self.stack, self.api, self.kinds, self.questions, self.warmup = stack, api, kinds, questions, warmup
        self.token = stack.token()
        self.taken: Counter[str] = Counter()
        self.cpu: dict[str, list[float]] = {}  # mode -> [before the first measured turn, after the last]

    def take(self, mode: str, process: local.ChatStreamProcess) -> tuple[local.StreamedTurn, float]:
        n = self.taken[mode]
        self.taken[mode] += 1
        pid = process.process.pid
        if n == self.warmup:
            self.cpu[mode] = [cpu_seconds(pid), 0.0]
        taken = self._turn(mode, process, self.questions[n % len(self.questions)])
        if mode in self.cpu:
            self.cpu[mode][1] = cpu_seconds(pid)
        return taken

    def _turn(
        self, mode: str, process: local.ChatStreamProcess, question: str
    ) -> tuple[local.StreamedTurn, float]:
        from tests.fakes.llm_script import tool_call_reply

        kind, llm, conversation = self.kinds[mode], self.stack.llm, self.stack.conversation()
        if kind == "compaction":  # the history the measured turn adds to
            self._stream(process, conversation, _long(f"First, {question}"))
            question = _long(question)
        elif kind in ("tool", "mcp"):
            question = TOOL_QUESTION
            llm.script(
                tool_call_reply("orders__lookup_order" if kind == "mcp" else "get_order_status", ORDER)
            )
        sent_before, asked_before, called_before = (
            len(llm.content_sent_at),
            len(llm.requests),
            len(self.api.requests),
        )
        turn = self._stream(process, conversation, question)
        asked = llm.requests[asked_before:]
        if kind in ("tool", "mcp") and not any(
            m.get("role") == "tool" and "shipped" in str(m.get("content")) for m in asked[-1]["messages"]
        ):
            raise RuntimeError(f"the {mode} call did not answer: {asked[-1]['messages'][-1]}")
        if kind == "tool":
            signed = ["x-caller-assertion" in r["headers"] for r in self.api.requests[called_before:]]
            if signed != [mode == "assertion"]:
                raise RuntimeError(f"the {mode} turn's calls of the tool API, with an assertion: {signed}")
        folded = any(SUMMARY_PROMPT in str(request["messages"]) for request in asked)
        if kind == "compaction" and folded != (mode == "compaction"):
            raise RuntimeError(f"the {mode} turn folded its history: {folded}")
        return turn, llm.content_sent_at[sent_before]  # the answer's first content delta

    def _stream(
        self, process: local.ChatStreamProcess, conversation: str, question: str
    ) -> local.StreamedTurn:
        turn = local.stream_turn(process.port, conversation, self.token, question)
        if turn.status != 200 or turn.events[-1:] != ["Completed"] or turn.first_chunk_at is None:
            raise RuntimeError(f"turn failed: {turn.status} {turn.events}\n{process.output()}")
        return turn

    def cpu_per_turn(self, mode: str, runs: int) -> float:
        before, after = self.cpu[mode]
        return (after - before) / runs * 1000


def _long(question: str) -> str:
    """The question, then the guide's text again and again up to LONG_CHARS (about 600 tokens)."""
    return (f"{question} Context: " + local.GUIDE.replace("\n", " ") * 20)[:LONG_CHARS]


def _answer_summaries(body: dict[str, Any]) -> Any:
    """The fake LLM's reply to compaction's summary call (any other request takes the script's)."""
    from tests.fakes.llm_script import text_reply

    return (
        text_reply("The user asked how the suite runs.") if SUMMARY_PROMPT in str(body["messages"]) else None
    )


def _knowledge_base(stack: local.LocalStack) -> str:
    """The retrieval section's 2,000 chunks in COLLECTION, as ingestion chunks and embeds them, upserted
    in batches (the document registry, which searches never read, left out: it is a write per document)."""
    from bench.retrieval import chunk_documents
    from rag_orchestrator.api.deps import process_aws
    from rag_orchestrator.retrieval.chunking import chunk_document
    from rag_orchestrator.retrieval.ingestion import embedding_text
    from rag_orchestrator.retrieval.knowledge_base import create_knowledge_base

    knowledge = create_knowledge_base(stack.settings(chroma_collection=COLLECTION), process_aws())
    started = time.perf_counter()
    chunks = [
        chunk
        for d in chunk_documents()
        for chunk in chunk_document(d["documentId"], d["title"], d["text"], size=800, overlap=120)
    ]
    for first in range(0, len(chunks), 250):
        batch = chunks[first : first + 250]
        texts = [embedding_text(str(c.metadata["title"]), c.text) for c in batch]
        knowledge.store.upsert(batch, knowledge.embedder.embed_batch(texts))
    return f"{knowledge.store.count()} chunks, upserted in {time.perf_counter() - started:.0f} s"


def _assertion_key() -> None:
    """The service's assertion key, where ASSERTION_PRIVATE_KEY_PARAM names it (SSM on moto)."""
    import boto3

    from rag_orchestrator.tools.assertion import generate_key_pem

    boto3.client("ssm").put_parameter(
        Name=KEY_PARAM, Value=generate_key_pem(), Type="SecureString", Overwrite=True
    )


def run(quick: bool = False) -> Section:
    from bench.mcp import serve
    from bench.retrieval import questions
    from devserver.stack import free_port
    from devserver.traces import TraceReceiver
    from tests.fakes.fake_tool_api import FakeToolAPI
    from tests.fakes.llm_script import text_reply

    section = Section("bill", packages=["chromadb", "mcp", "opentelemetry-sdk", "pyjwt", "uvicorn"])
    runs, warmup = (10, 3) if quick else (50, 6)
    layout = lambda_layout.prepare()
    stack = local.shared()
    section.details["knowledge base"] = _knowledge_base(stack)
    _assertion_key()
    work = ROOT / ".local" / "bench" / "bill"
    work.mkdir(parents=True, exist_ok=True)
    with ExitStack() as running:
        mcp_port = free_port()
        mcp_server = serve(mcp_port)
        running.callback(mcp_server.wait, 10)
        running.callback(mcp_server.terminate)
        api, receiver = running.enter_context(FakeToolAPI()), TraceReceiver()
        running.callback(receiver.stop)
        stack.llm.default, stack.llm.answer_first = text_reply(ANSWER, chunks=5), _answer_summaries
        running.callback(setattr, stack.llm, "answer_first", None)
        running.callback(setattr, stack.llm, "default", None)
        modes = configurations(work, api.url, f"http://127.0.0.1:{mcp_port}/mcp", receiver.url)
        envs = {mode: stack.stream_env(layout) | EVERYWHERE | extra for mode, (_, extra) in modes.items()}
        turns = Turns(stack, api, {mode: kind for mode, (kind, _) in modes.items()}, questions(), warmup)
        samples, _ = alternate(layout, envs, turns.take, runs, warmup)
        spans = len(receiver.received())
    if not spans:
        raise RuntimeError("tracing on, and the receiver got no span")
    bill(section, samples, lambda mode: turns.cpu_per_turn(mode, runs), runs)
    section.details["spans received"] = spans
    return section


def bill(section: Section, samples: Any, cpu: Callable[[str], float], runs: int) -> None:
    """Two goal rows a feature (first token, CPU), the baselines' own figures, and the one table;
    `cpu(mode)`: a configuration's CPU per turn (ms)."""
    baselines = {
        "off": "a plain turn",
        "tool": "an HTTP tool turn",
        "no compaction": "a long turn after another (CPU: both)",
    }
    for mode, what in baselines.items():
        section.add(
            f"baseline, {what}: request sent -> first ResponseChunk, warm", "ms", samples[mode]["first"]
        )
        section.add(f"baseline, {what}: CPU", "ms", cpu(mode)).runs = runs
    rows = []
    for line in LINES:
        paired = zip(samples[line.on]["first"], samples[line.off]["first"], strict=True)
        first = section.add(
            f"{line.feature}: added first token, warm", "ms", [on - off for on, off in paired]
        )
        first.goal, first.met = f"<= {line.first_ms:g} ms median", first.median <= line.first_ms
        added = section.add(f"{line.feature}: added CPU per turn", "ms", cpu(line.on) - cpu(line.off))
        added.runs, added.goal, added.met = runs, f"<= {line.cpu_ms:g} ms", added.median <= line.cpu_ms
        rows.append(
            {
                "feature": line.feature,
                "added CPU per turn": f"{added.median:.1f} ms",
                "added first token, warm (median, p95)": f"{first.median:.2f} ms, {first.p95:.1f} ms",
                "budget": f"<= {line.first_ms:g} ms first token, <= {line.cpu_ms:g} ms CPU",
                "": "met" if first.met and added.met else "**missed**",
            }
        )
    section.details["table: the bill, warm, per turn"] = rows
