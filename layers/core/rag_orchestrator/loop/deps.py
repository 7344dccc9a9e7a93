"""A turn's dependencies, in one object the composition root (api/deps.py) builds once and every turn
shares; the turn's own state is loop/state.py's. Tests and benchmarks build it with scripted parts."""

from __future__ import annotations

from dataclasses import dataclass, field

from rag_orchestrator.loop.configuration import LoopConfig
from rag_orchestrator.loop.finalizers import DirectFinalizer, Finalizer
from rag_orchestrator.loop.ports import (
    AfterTurn,
    AttachmentSource,
    KnowledgeSearch,
    ToolChooser,
    Tools,
    TurnStore,
)
from rag_orchestrator.providers.strategies import ModelStrategy
from rag_orchestrator.retrieval.embedders import Embedder
from rag_orchestrator.tracing import NO_TRACER, Tracer


@dataclass(frozen=True, slots=True)
class TurnDeps:
    store: TurnStore
    strategy: ModelStrategy
    tools: Tools
    choose_tools: ToolChooser
    config: LoopConfig
    search: KnowledgeSearch | None = None  # the initial knowledge search (LOOP_INITIAL_RAG)
    finalizer: Finalizer = field(default_factory=DirectFinalizer)
    after_turn: tuple[AfterTurn, ...] = ()  # in order, once the terminal event is out
    attachments: AttachmentSource | None = None
    embedder: Embedder | None = None  # embeds the message once for tool selection and search
    tracer: Tracer = NO_TRACER  # the turn's spans (tracing.py)
