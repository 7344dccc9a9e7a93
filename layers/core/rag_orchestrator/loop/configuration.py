"""The loop's configuration: the settings a turn and a streamed turn's task read, built from `Settings`
by the composition root (api/deps.py), so that the loop reads nothing else of them."""

from __future__ import annotations

from dataclasses import dataclass, field

from rag_orchestrator.domain.budgets import Budgets
from rag_orchestrator.domain.usage import Prices


@dataclass(frozen=True, slots=True)
class LoopConfig:
    max_iterations: int  # LOOP_MAX_ITERATIONS: model calls a turn may make
    initial_search: bool  # LOOP_INITIAL_RAG: search the knowledge base before the first call
    window: int  # CONVERSATION_ROLLING_WINDOW: earlier messages the model reads
    attachment_chars: int  # ATTACHMENT_CONTEXT_MAX_CHARS: a question's attachments' text, at most
    approval_ttl_minutes: int  # APPROVAL_TTL_MINUTES: how long a held call waits for its decision
    default_seconds: float  # TURN_DEFAULT_BUDGET_SECONDS: a turn's time when its request sets no deadline
    lease_margin_seconds: float  # TURN_DEADLINE_MARGIN_SECONDS: the turn lock outlives the deadline by this
    budgets: Budgets  # BUDGET_TOKENS_PER_DAY
    reserve_tokens: int  # BUDGET_TURN_RESERVE_TOKENS: what a limited turn holds of its caller's day
    prices: Prices = field(default_factory=Prices)  # MODEL_PRICES: a turn's estimated cost, in its log line


@dataclass(frozen=True, slots=True)
class StreamConfig:
    """A streamed turn's task (loop/turn_stream.py)."""

    flush_seconds: float  # STREAM_LOG_FLUSH_MS, in seconds: how often the event log is written
    keepalive_seconds: float  # SSE_KEEPALIVE_SECONDS
    stop_on_disconnect: bool  # TURN_STOP_ON_DISCONNECT
