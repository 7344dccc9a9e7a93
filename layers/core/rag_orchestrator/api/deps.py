"""The composition root: the parts an app uses, built once per app from its settings, and the FastAPI
dependencies that hand them to routes.

`create_app` puts one `Services` on `app.state`; each part is built on first use, so a function pays
at cold start only for what its first request needs. AWS clients come from one `AwsClients` (one
boto3 session), the process's unless the app is given its own; the settings, the tool catalogue and
MCP servers' headers read their secrets through it. Tests replace parts with
`app.dependency_overrides[get_orchestrator] = ...` or build an app from their own settings.
"""

from __future__ import annotations

from functools import cache
from string import Template
from typing import TYPE_CHECKING, cast

from starlette.requests import Request

from rag_orchestrator.aws import AwsClients
from rag_orchestrator.built_once import built_once
from rag_orchestrator.config import Settings
from rag_orchestrator.ssm_params import SecretReader
from rag_orchestrator.tracing import NO_TRACER, Tracer

if TYPE_CHECKING:  # imported where built: a function that never runs a turn never loads the loop
    from mcp.server import Server as McpServer

    from rag_orchestrator.api.answer_spending import MeteredAnswers
    from rag_orchestrator.attachments.service import Attachments
    from rag_orchestrator.attachments.turns import TurnAttachments
    from rag_orchestrator.conversations.dynamo import DynamoConversationStore
    from rag_orchestrator.conversations.in_process import InProcessStore
    from rag_orchestrator.conversations.window_counters import WindowCounter
    from rag_orchestrator.lifecycle.service import Lifecycle
    from rag_orchestrator.lifecycle.sharing import Shares
    from rag_orchestrator.loop.configuration import LoopConfig, StreamConfig
    from rag_orchestrator.loop.control import RunningTurns
    from rag_orchestrator.loop.orchestrator import Orchestrator
    from rag_orchestrator.loop.ports import AfterTurn
    from rag_orchestrator.loop.turn import Turn
    from rag_orchestrator.loop.turn_stream import TurnStream
    from rag_orchestrator.providers.strategies import ModelStrategy
    from rag_orchestrator.retrieval.answers import Answerer
    from rag_orchestrator.retrieval.embedders import Embedder
    from rag_orchestrator.retrieval.followup import FollowUps
    from rag_orchestrator.retrieval.fragments import FragmentIndex
    from rag_orchestrator.retrieval.knowledge_base import KnowledgeBase
    from rag_orchestrator.retrieval.search import Retriever
    from rag_orchestrator.stream_log.log import EventLog
    from rag_orchestrator.tools.assertion import AssertionSigner
    from rag_orchestrator.tools.toolbox import Toolbox


@cache
def process_aws() -> AwsClients:
    """The AWS clients of every app this process builds (botocore reads its data once per session)."""
    return AwsClients()


@cache
def secrets_of(aws: AwsClients) -> SecretReader:
    """One secret reader per set of clients: a secret is fetched once however many apps and threads ask."""
    return SecretReader(aws)


class Services:
    def __init__(self, settings: Settings, aws: AwsClients | None = None) -> None:
        self.aws = aws or process_aws()
        self.secrets = secrets_of(self.aws)
        self.settings = settings.read_secrets_with(self.secrets)

    @built_once
    def tracer(self) -> Tracer:
        """Spans of turns and store requests; NO_TRACER (nothing loaded) without OTEL_EXPORTER_OTLP_ENDPOINT."""
        settings = self.settings
        if not settings.otel_exporter_otlp_endpoint:
            return NO_TRACER
        from rag_orchestrator.otel_tracing import OtelTracer

        return OtelTracer(settings.otel_exporter_otlp_endpoint, capture_content=settings.otel_capture_content)

    @built_once
    def store(self) -> DynamoConversationStore | InProcessStore:
        """Either backend provides every part of the store: the routes' (conversations/store.py), a
        turn's (loop/ports.py) and the title hook's (loop/titles.py)."""
        from rag_orchestrator.conversations.factory import create_store

        return create_store(self.settings, self.aws, self.tracer)

    @built_once
    def lifecycle(self) -> Lifecycle:
        """Erasures and exports (lifecycle/): started here, run by LifecycleFunction or a thread of this process."""
        from rag_orchestrator.lifecycle.runner import create_lifecycle

        return create_lifecycle(self.settings, self.aws)

    @built_once
    def shares(self) -> Shares | None:
        """Read-only snapshots of conversations (lifecycle/sharing.py); None with in-process storage."""
        from rag_orchestrator.lifecycle.runner import create_shares

        return create_shares(self.settings, self.aws)

    @built_once
    def attachments(self) -> Attachments:
        """Uploads and their segments; StorageUnavailable (503) without ATTACHMENTS_BUCKET."""
        from rag_orchestrator.attachments.factory import create_attachments

        return create_attachments(self.settings, self.aws, self.memory, self.store)

    @built_once
    def turn_attachments(self) -> TurnAttachments:
        """What turns and HTTP tools ask of attachments; the service itself is built when first asked."""
        from rag_orchestrator.attachments.turns import TurnAttachments

        return TurnAttachments(lambda: self.attachments)

    @built_once
    def event_log(self) -> EventLog:
        """The log of streamed turns, beside the conversations (stream_log/)."""
        from rag_orchestrator.stream_log.factory import create_event_log

        return create_event_log(self.settings, self.aws)

    @built_once
    def running_turns(self) -> RunningTurns:
        """The streamed turns running in this process, for a cancel to stop at once."""
        from rag_orchestrator.loop.control import RunningTurns

        return RunningTurns()

    @built_once
    def window_counter(self) -> WindowCounter:
        """Rate limits that hold across instances (guest tokens minted per address and hour)."""
        from rag_orchestrator.conversations.window_counters import create_window_counter

        return create_window_counter(self.settings, self.aws)

    @built_once
    def caller_assertions(self) -> AssertionSigner:
        """Signs the X-Caller-Assertion of HTTP tools and MCP servers with `identity: assertion`
        (docs/tools.md, docs/mcp.md); its public key is GET /.well-known/jwks.json."""
        from rag_orchestrator.tools.assertion import create_signer

        return create_signer(self.settings, self.secrets)

    @built_once
    def toolbox(self) -> Toolbox:
        """rag_search, the catalogue's tools and MCP_SERVERS' (listed when first used); building it
        validates the catalogue and MCP_SERVERS (ConfigError)."""
        from rag_orchestrator.tools.rag_search import RagSearchTool
        from rag_orchestrator.tools.toolbox import build_toolbox, selection_embedder

        return build_toolbox(
            self.settings,
            rag_search=RagSearchTool(self.settings, self.retriever, self.follow_ups),
            embedder=selection_embedder(lambda: self.embedder),
            attachment_links=self.turn_attachments,
            assertions=self.caller_assertions,
            aws=self.aws,
            secrets=self.secrets,
        )

    @built_once
    def knowledge_mcp(self) -> McpServer:
        """The knowledge base as an MCP server (POST /mcp): the SDK loads here, at the first request; its
        tools search with the routes' retriever and answer with their answerer."""
        from rag_orchestrator.api.knowledge_mcp import knowledge_server

        return knowledge_server(self.settings, self.retriever, lambda: self.answers)

    @built_once
    def strategy(self) -> ModelStrategy:
        """The model strategy of MODEL_STRATEGY, for turns and answers alike."""
        from rag_orchestrator.providers.strategies import create_strategy

        return create_strategy(self.settings)

    @built_once
    def embedder(self) -> Embedder:
        """EMBEDDING_PROVIDER's embedder, shared by ingestion, search, memory and tool selection."""
        from rag_orchestrator.retrieval.embedders import create_embedder

        return create_embedder(self.settings, self.aws)

    @built_once
    def knowledge_base(self) -> KnowledgeBase:
        """CHROMA_COLLECTION, its embedder and its document registry."""
        from rag_orchestrator.retrieval.knowledge_base import create_knowledge_base

        return create_knowledge_base(self.settings, self.aws, self.embedder)

    @built_once
    def fragment_index(self) -> FragmentIndex:
        """CHROMA_MEMORY_COLLECTION, whether or not new turns are remembered: the memory routes read it."""
        from rag_orchestrator.retrieval.fragments import create_fragment_index

        return create_fragment_index(self.settings, self.embedder)

    @built_once
    def memory(self) -> FragmentIndex | None:
        """Conversation memory for turns and searches, or None with MEMORY_ENABLED=false."""
        return self.fragment_index if self.settings.memory_enabled else None

    @built_once
    def retriever(self) -> Retriever:
        """The search of RETRIEVAL_MODE and RERANKER, for every route and the chat's rag_search."""
        from rag_orchestrator.retrieval.search import create_retriever

        return create_retriever(self.settings, self.knowledge_base, self.memory)

    @built_once
    def follow_ups(self) -> FollowUps:
        """How a later turn's message is searched: condensed by the model (CONDENSE_FOLLOW_UPS), else with
        the earlier questions' words."""
        from rag_orchestrator.retrieval.followup import FollowUps

        return FollowUps((lambda: self.strategy) if self.settings.condense_follow_ups else None)

    @built_once
    def answer_template(self) -> Template:
        """The answer prompt (RAG_PROMPT_TEMPLATE_PATH), read and checked once."""
        from rag_orchestrator.retrieval.prompt import load_template

        return load_template(self.settings.rag_prompt_template_path)

    @built_once
    def answerer(self) -> Answerer:
        """Generated answers with citations, counted nowhere (the evaluation's)."""
        from rag_orchestrator.retrieval.answers import Answerer

        return Answerer(self.retriever, self.strategy, self.answer_template, self.settings, self.tracer)

    @built_once
    def answers(self) -> MeteredAnswers:
        """The answerer's answers, each counted on its asker's day (api/answer_spending.py)."""
        from rag_orchestrator.api.answer_spending import MeteredAnswers

        settings = self.settings
        return MeteredAnswers(
            self.answerer, self.store, settings.budgets, settings.budget_turn_reserve_tokens
        )

    @built_once
    def orchestrator(self) -> Orchestrator:
        """The turn's dependencies (loop/deps.py), built once and shared by every turn."""
        from rag_orchestrator.loop.deps import TurnDeps
        from rag_orchestrator.loop.finalizers import FINALIZERS
        from rag_orchestrator.loop.orchestrator import Orchestrator
        from rag_orchestrator.loop.summaries import Compaction
        from rag_orchestrator.loop.titles import AutoTitle
        from rag_orchestrator.loop.toolsets import tool_chooser
        from rag_orchestrator.loop.turn_memory import TurnMemory

        toolbox = self.toolbox
        after_turn: list[AfterTurn] = []
        if self.settings.auto_title:  # first: the title is what the app's list shows
            after_turn.append(AutoTitle(self.store, self.strategy))
        if self.memory is not None:
            after_turn.append(TurnMemory(self.memory, self.store))
        after_turn.append(Compaction(self.store, self.strategy, self.settings.context_token_budget))
        deps = TurnDeps(
            store=self.store,
            strategy=self.strategy,
            tools=toolbox.registry,
            choose_tools=tool_chooser(toolbox.registry, toolbox.selector),
            config=loop_config(self.settings),
            search=toolbox.search,
            finalizer=FINALIZERS[self.settings.loop_finalizer](),
            after_turn=tuple(after_turn),
            attachments=self.turn_attachments,
            embedder=toolbox.selector.embedder,
            tracer=self.tracer,
        )
        return Orchestrator(deps)

    def turn_stream(self, turn: Turn) -> TurnStream:
        """A claimed turn as its own task, logging its events (loop/turn_stream.py); started by the caller."""
        from rag_orchestrator.loop.turn_stream import TurnStream

        return TurnStream(
            turn, log=self.event_log, running=self.running_turns, config=stream_config(self.settings)
        )


def loop_config(settings: Settings) -> LoopConfig:
    """What a turn reads of the settings."""
    from rag_orchestrator.loop.configuration import LoopConfig

    return LoopConfig(
        max_iterations=settings.loop_max_iterations,
        initial_search=settings.loop_initial_rag,
        window=settings.conversation_rolling_window,
        attachment_chars=settings.attachment_context_max_chars,
        approval_ttl_minutes=settings.approval_ttl_minutes,
        default_seconds=settings.turn_default_budget_seconds,
        lease_margin_seconds=settings.turn_deadline_margin_seconds,
        budgets=settings.budgets,
        reserve_tokens=settings.budget_turn_reserve_tokens,
        prices=settings.prices,
    )


def stream_config(settings: Settings) -> StreamConfig:
    """What a streamed turn's task reads of the settings."""
    from rag_orchestrator.loop.configuration import StreamConfig

    return StreamConfig(
        flush_seconds=settings.stream_log_flush_ms / 1000,
        keepalive_seconds=settings.sse_keepalive_seconds,
        stop_on_disconnect=settings.turn_stop_on_disconnect,
    )


def services(request: Request) -> Services:
    return cast(Services, request.app.state.services)


def get_settings(request: Request) -> Settings:
    return services(request).settings


def get_store(request: Request) -> DynamoConversationStore | InProcessStore:
    return services(request).store


def get_attachments(request: Request) -> Attachments:
    return services(request).attachments


def get_event_log(request: Request) -> EventLog:
    return services(request).event_log


def get_running_turns(request: Request) -> RunningTurns:
    return services(request).running_turns


def get_toolbox(request: Request) -> Toolbox:
    return services(request).toolbox


def get_strategy(request: Request) -> ModelStrategy:
    return services(request).strategy


def get_orchestrator(request: Request) -> Orchestrator:
    return services(request).orchestrator


def get_shares_or_none(request: Request) -> Shares | None:
    return services(request).shares


def get_memory(request: Request) -> FragmentIndex | None:
    return services(request).memory


def get_window_counter(request: Request) -> WindowCounter:
    return services(request).window_counter


def get_assertions(request: Request) -> AssertionSigner:
    return services(request).caller_assertions


def get_retriever(request: Request) -> Retriever:
    return services(request).retriever


def get_answers(request: Request) -> MeteredAnswers:
    return services(request).answers


def get_knowledge_base(request: Request) -> KnowledgeBase:
    return services(request).knowledge_base
