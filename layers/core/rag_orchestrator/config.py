"""Settings: every environment variable of docs/configuration.md, validated once at start."""

from __future__ import annotations

import os
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, PrivateAttr, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from rag_orchestrator.domain.budgets import GUEST_TOKENS_PER_DAY, GUEST_TOKENS_PER_DAY_TOTAL, Budgets
from rag_orchestrator.domain.callers import normalise_roles
from rag_orchestrator.domain.usage import Prices
from rag_orchestrator.errors import ConfigError

if TYPE_CHECKING:
    from rag_orchestrator.ssm_params import SecretReader

Strategy = Literal[
    "deepseek_single", "qwen_single_thinking", "qwen_single_instruct", "openai_compatible", "extractive"
]

# Secrets that may be given by reference (`<NAME>_PARAM`: an SSM parameter or a Secrets Manager secret,
# ssm_params.py) when running in AWS.
SECRET_FIELDS = (
    "deepseek_api_key",
    "qwen_api_key",
    "openai_compatible_api_key",
    "chroma_token",
    "embedding_api_key",
    "reranker_api_key",
    "attachment_caption_api_key",
    "attachment_whisper_api_key",
    "guest_token_secret",
    "assertion_private_key",
    "cursor_secret",
)


def in_lambda() -> bool:
    return "AWS_LAMBDA_FUNCTION_NAME" in os.environ


class Settings(BaseSettings):
    # env_ignore_empty: an empty variable is unset (template.yaml passes "" for an optional setting left blank).
    model_config = SettingsConfigDict(
        case_sensitive=False, extra="ignore", frozen=True, env_ignore_empty=True
    )

    model_strategy: Strategy = "extractive"
    deepseek_api_key: SecretStr | None = None
    deepseek_base_url: str = "https://api.deepseek.com"
    deepseek_model: str = "deepseek-flash"  # api-docs.deepseek.com pricing: deepseek-chat retired 2026-07-24
    deepseek_thinking: bool = False
    qwen_api_key: SecretStr | None = None
    qwen_base_url: str = "https://dashscope-intl.aliyuncs.com/compatible-mode/v1"
    qwen_thinking_model: str = "qwen-plus"
    qwen_instruct_model: str = "qwen-plus"
    openai_compatible_base_url: str | None = None
    openai_compatible_api_key: SecretStr | None = None
    openai_compatible_model: str | None = None
    model_timeout_seconds: float = Field(120.0, gt=0)
    model_idle_timeout_seconds: float = Field(60.0, gt=0)
    model_max_retries: int = Field(3, ge=0, le=10)
    model_max_tokens: int = Field(4096, ge=1)
    model_temperature: float = Field(0.7, ge=0.0, le=2.0)  # not sent in thinking mode (providers/*.py)

    loop_max_iterations: int = Field(10, ge=1, le=50)
    loop_initial_rag: bool = True
    loop_finalizer: Literal["direct", "structured"] = "direct"
    tool_timeout_seconds: float = Field(30.0, gt=0)

    # Durable turns (docs/streams.md): a turn ends this long before its function's deadline; with no
    # deadline known (a dev server) it may run for the default budget. The event log is written at most
    # once per STREAM_LOG_FLUSH_MS (each write bills a write unit, and a second of chunks fits in one:
    # docs/cost.md); idle streams get a comment line every SSE_KEEPALIVE_SECONDS.
    turn_deadline_margin_seconds: float = Field(3.0, ge=0, le=60)
    turn_default_budget_seconds: float = Field(300.0, gt=0, le=900)
    turn_stop_on_disconnect: bool = False
    stream_log_flush_ms: int = Field(1000, ge=10, le=5000)
    sse_keepalive_seconds: float = Field(15.0, gt=0, le=300)

    # Approvals and budgets (docs/approvals.md, docs/usage.md): a held tool call undecided this long is
    # denied; BUDGET_TOKENS_PER_DAY is one number, or role=number pairs (unset: unlimited).
    approval_ttl_minutes: int = Field(60, ge=1, le=10_080)
    budget_tokens_per_day: str | None = None
    budget_turn_reserve_tokens: int = Field(8000, ge=0, le=10_000_000)  # held by a running limited turn

    conversation_rolling_window: int = Field(20, ge=1, le=500)
    # Past this many estimated tokens of history, older messages fold into a running summary (loop/summaries.py)
    context_token_budget: int = Field(24_000, ge=1000, le=1_000_000)
    conversation_storage: Literal["dynamodb", "memory"] = "dynamodb"
    conversations_table: str | None = None
    transcripts_bucket: str | None = None
    documents_bucket: str | None = None
    aws_endpoint_url: str | None = None
    max_request_bytes: int = Field(1_048_576, ge=1024)
    cursor_secret: SecretStr | None = None  # signs page cursors; derived from the table name when unset
    audit_actor_secret: SecretStr | None = None  # keys audit records' actorRef; derived when unset

    chroma_url: str = "http://127.0.0.1:8001"
    chroma_token: SecretStr | None = None
    chroma_tenant: str = "default_tenant"
    chroma_database: str = "default_database"
    chroma_collection: str = Field("knowledge-base", min_length=3, max_length=512)
    chroma_timeout_seconds: float = Field(3.0, gt=0, le=60)  # each phase of a search request
    chroma_memory_collection: str = Field("conversation-memory", min_length=3, max_length=512)
    memory_enabled: bool = True  # index each completed turn; a turn's searches recall the caller's fragments
    memory_top_k: int = Field(2, ge=0, le=10)  # places for recalled turn fragments, after the knowledge base
    memory_min_score: float = Field(0.6, ge=0.0, le=1.0)  # a recalled fragment's least similarity
    auto_title: bool = True  # title a conversation after its first answered turn (loop/titles.py)

    embedding_provider: Literal["hashing", "wordllama", "openai_compatible", "bedrock"] = "hashing"
    embedding_base_url: str | None = None
    embedding_model: str | None = None
    embedding_api_key: SecretStr | None = None
    embedding_dimensions: int | None = Field(None, ge=8, le=8192)
    embedding_batch_size: int = Field(32, ge=1, le=2048)
    embedding_timeout_seconds: float = Field(5.0, gt=0, le=300)
    embedding_max_retries: int = Field(3, ge=0, le=10)

    rag_topk_default: int = Field(5, ge=1)
    rag_topk_max: int = Field(10, ge=1, le=100)
    rag_similarity_threshold: float = Field(0.6, ge=0.0, le=1.0)
    rag_prompt_template_path: str | None = None
    rag_stream_enabled: bool = True
    rag_context_max_chars: int = Field(2000, ge=200, le=20000)  # each passage's text in the answer prompt
    retrieval_mode: Literal["hybrid", "dense", "lexical"] = "hybrid"
    retrieval_candidates: int = Field(20, ge=1, le=200)  # what each ranking offers fusion and the reranker
    reranker: Literal["none", "local", "http"] = "local"
    reranker_url: str | None = None  # the full endpoint, e.g. https://api.cohere.com/v2/rerank
    reranker_model: str | None = None
    reranker_api_key: SecretStr | None = None
    reranker_timeout_seconds: float = Field(5.0, gt=0, le=60)
    condense_follow_ups: bool = True  # a model rewrites a later turn's message for its initial search
    chunk_size: int = Field(800, ge=100, le=8000)
    chunk_overlap: int = Field(120, ge=0, le=2000)

    tool_catalog_path: str | None = None
    tool_selection_top_k: int = Field(6, ge=1, le=100)
    tool_selection_min_score: float = Field(0.0, ge=-1.0, le=1.0)
    tool_response_max_bytes: int = Field(65_536, ge=1024, le=10_485_760)  # larger HTTP tool answers fail
    tool_index_cache: bool = False  # keep the tool index in TRANSCRIPTS_BUCKET under cache/tool-index/
    # Where ${NAME}s are: an SSM path, or a Secrets Manager name prefix (secretsmanager:rag/tools/).
    tool_secrets_prefix: str | None = Field(
        None, pattern=r"^(/[A-Za-z0-9_.\-/]*/|secretsmanager:[A-Za-z0-9/_+=.@-]*/)$"
    )
    # MCP servers whose tools join the catalogue's (docs/mcp.md): a file, s3://, ssm: or the JSON itself;
    # each server's tool list is kept this long before it is listed again.
    mcp_servers: str | None = None
    mcp_tools_ttl_seconds: float = Field(300.0, ge=1, le=86_400)

    # Attachments (docs/attachments.md): limits, and one engine per modality ("none": no segment).
    attachments_bucket: str | None = None
    attachment_max_bytes: int = Field(20 * 1024 * 1024, ge=1, le=5 * 1024**3)
    attachment_allowed_types: str = ""  # comma-separated subset of the supported types; empty: all of them
    attachment_url_ttl_seconds: int = Field(300, ge=10, le=604_800)
    attachment_context_max_chars: int = Field(8000, ge=200, le=200_000)
    attachment_processing_timeout_seconds: float = Field(240.0, gt=0, le=900)
    attachment_ocr_backend: Literal["none", "rapidocr", "textract"] = "none"
    attachment_caption_backend: Literal["none", "openai_compatible"] = "none"
    attachment_caption_base_url: str | None = None
    attachment_caption_model: str | None = None
    attachment_caption_api_key: SecretStr | None = None
    attachment_speech_backend: Literal["none", "pocketsphinx", "transcribe", "whisper"] = "none"
    attachment_whisper_base_url: str | None = None
    attachment_whisper_model: str = "whisper-1"
    attachment_whisper_api_key: SecretStr | None = None
    attachment_transcribe_language: str = Field("en-US", pattern=r"^[a-z]{2}-[A-Z]{2}$")

    auth_mode: Literal["jwt", "dev"] = "dev"
    allow_anonymous: bool = False
    guest_token_secret: SecretStr | None = Field(None, min_length=32)  # signs guest tokens (HS256)
    guest_ttl_hours: int = Field(24, ge=1, le=168)  # a guest token's life, and its conversations'
    # Guests' limits (docs/auth.md): tokens per guest and for all guests per UTC day, always enforced;
    # guest tokens minted per source address per hour.
    guest_tokens_per_day: int = Field(GUEST_TOKENS_PER_DAY, ge=1)
    guest_tokens_per_day_total: int = Field(GUEST_TOKENS_PER_DAY_TOTAL, ge=1)
    guest_mints_per_hour: int = Field(20, ge=1, le=100_000)
    # Caller assertions HTTP tools send (docs/tools.md): the PEM of the service's ES256 key (in AWS:
    # ASSERTION_PRIVATE_KEY under TOOL_SECRETS_PREFIX, or what ASSERTION_PRIVATE_KEY_PARAM names), and the `iss` tool APIs expect.
    assertion_private_key: SecretStr | None = None
    assertion_issuer: str = Field("rag-orchestrator", min_length=1, max_length=200)
    kb_writer_roles: str = "admin"  # comma-separated: who may change the knowledge base
    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    jwt_jwks_url: str | None = None
    jwks_timeout_seconds: float = Field(3.0, gt=0, le=30)
    caller_id_claim: str = "sub"
    roles_claim: str = "cognito:groups"

    archive_after_days: int = Field(30, ge=0)
    deleted_retention_days: int = Field(30, ge=0)
    conversation_retention_days: int | None = Field(None, ge=1)  # idle longer: deleted (unset: kept)
    audit_retention_days: int = Field(365, ge=1)  # audit records outlive their deleted conversation

    port: int = Field(8000, ge=1, le=65535)

    _secrets: SecretReader | None = PrivateAttr(None)  # given by the composition root (read_secrets_with)

    @model_validator(mode="before")
    @classmethod
    def _check_secret_references(cls, data: Any) -> Any:
        from rag_orchestrator.ssm_params import check_references

        check_references(f"{name.upper()}_PARAM" for name in SECRET_FIELDS)
        return data

    # Traces and the usage report (docs/observability.md): spans go over OTLP/HTTP to this collector
    # only when it is set; prompt and answer text only with OTEL_CAPTURE_CONTENT. MODEL_PRICES prices
    # tokens per model for GET /api/v1/admin/usage.
    otel_exporter_otlp_endpoint: str | None = Field(None, pattern=r"^https?://[^\s/]+(/\S*)?$")
    otel_capture_content: bool = False
    model_prices: str | None = None

    @field_validator(
        "deepseek_base_url",
        "qwen_base_url",
        "openai_compatible_base_url",
        "aws_endpoint_url",
        "chroma_url",
        "embedding_base_url",
        "reranker_url",
        "attachment_caption_base_url",
        "attachment_whisper_base_url",
        "jwt_jwks_url",
    )
    @classmethod
    def _check_url(cls, value: str | None) -> str | None:
        """An endpoint the service sends requests to: an http(s) URL with a host, or a start-up error
        naming the setting (not a failure of every request later)."""
        if value:
            try:
                parts = urlsplit(value)
                valid = parts.scheme in ("http", "https") and bool(parts.hostname) and parts.port != 0
            except ValueError:  # a bad port, an unclosed IPv6 bracket
                valid = False
            if not valid or any(c.isspace() for c in value):
                raise ValueError("must be an http:// or https:// URL with a host")
        return value

    @field_validator("budget_tokens_per_day")
    @classmethod
    def _check_budgets(cls, value: str | None) -> str | None:
        Budgets.parse(value)  # ValueError says what is wrong
        return value

    @field_validator("model_prices")
    @classmethod
    def _check_prices(cls, value: str | None) -> str | None:
        Prices.parse(value)
        return value

    @model_validator(mode="after")
    def _check_combinations(self) -> Settings:
        if self.auth_mode == "dev" and in_lambda():
            raise ValueError("AUTH_MODE=dev is refused inside Lambda; use AUTH_MODE=jwt")
        # Outside Lambda, no secret means a random one per process (api/guest_tokens.py).
        signs_guests = self.guest_token_secret or os.environ.get("GUEST_TOKEN_SECRET_PARAM")
        if self.allow_anonymous and in_lambda() and not signs_guests:
            raise ValueError("GUEST_TOKEN_SECRET_PARAM is required when ALLOW_ANONYMOUS=true")
        if self.auth_mode == "jwt" and not self.jwt_issuer:
            raise ValueError("JWT_ISSUER is required when AUTH_MODE=jwt")
        if self.conversation_storage == "dynamodb":
            for name in ("conversations_table", "transcripts_bucket"):
                if not getattr(self, name):
                    raise ValueError(f"{name.upper()} is required when CONVERSATION_STORAGE=dynamodb")
        if self.chroma_memory_collection == self.chroma_collection:
            raise ValueError("CHROMA_MEMORY_COLLECTION must differ from CHROMA_COLLECTION")
        if self.rag_topk_default > self.rag_topk_max:
            raise ValueError("RAG_TOPK_DEFAULT must not exceed RAG_TOPK_MAX")
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError("CHUNK_OVERLAP must be smaller than CHUNK_SIZE")
        needs = {
            "openai_compatible": ("openai_compatible_base_url", "openai_compatible_model"),
        }.get(self.model_strategy, ())
        for name in needs:
            if not getattr(self, name):
                raise ValueError(f"{name.upper()} is required when MODEL_STRATEGY={self.model_strategy}")
        if self.attachment_caption_backend == "openai_compatible":
            for name in ("attachment_caption_base_url", "attachment_caption_model"):
                if not getattr(self, name):
                    raise ValueError(
                        f"{name.upper()} is required when ATTACHMENT_CAPTION_BACKEND=openai_compatible"
                    )
        if self.attachment_allowed_types.strip():  # checked only where a deployer lists types
            from rag_orchestrator.domain.attachments import CONTENT_TYPES

            unsupported = set(self.attachment_types) - set(CONTENT_TYPES)
            if unsupported:
                raise ValueError(
                    "ATTACHMENT_ALLOWED_TYPES names types this service cannot read: "
                    + ", ".join(sorted(unsupported))
                )
        if self.attachment_speech_backend == "whisper" and not self.attachment_whisper_base_url:
            raise ValueError("ATTACHMENT_WHISPER_BASE_URL is required when ATTACHMENT_SPEECH_BACKEND=whisper")
        if self.reranker == "http" and not self.reranker_url:
            raise ValueError("RERANKER_URL is required when RERANKER=http")
        if self.embedding_provider == "openai_compatible":
            for name in ("embedding_base_url", "embedding_model"):
                if not getattr(self, name):
                    raise ValueError(f"{name.upper()} is required when EMBEDDING_PROVIDER=openai_compatible")
        return self

    @property
    def jwks_url(self) -> str | None:
        if self.jwt_jwks_url:
            return self.jwt_jwks_url
        return f"{self.jwt_issuer.rstrip('/')}/.well-known/jwks.json" if self.jwt_issuer else None

    @property
    def attachment_types(self) -> tuple[str, ...]:
        """ATTACHMENT_ALLOWED_TYPES as content types (all the supported ones when unset)."""
        listed = [t.strip().lower() for t in self.attachment_allowed_types.split(",") if t.strip()]
        if listed:
            return tuple(listed)
        from rag_orchestrator.domain.attachments import CONTENT_TYPES  # not on every start-up

        return tuple(CONTENT_TYPES)

    @property
    def budgets(self) -> Budgets:
        parsed = Budgets.parse(self.budget_tokens_per_day)
        return parsed.with_guests(self.guest_tokens_per_day, self.guest_tokens_per_day_total)

    @property
    def prices(self) -> Prices:
        return Prices.parse(self.model_prices)

    @property
    def kb_writers(self) -> tuple[str, ...]:
        """KB_WRITER_ROLES as roles (`moderator` is `mod`)."""
        return normalise_roles(self.kb_writer_roles.split(","))

    def read_secrets_with(self, secrets: SecretReader) -> Settings:
        """These settings, reading `<NAME>_PARAM` secrets through `secrets` (the composition root's)."""
        bound = self.model_copy()
        bound._secrets = secrets
        return bound

    def secret(self, name: str) -> str | None:
        """A secret's value: from the environment, else, in AWS, the one `<NAME>_PARAM` names
        (an SSM parameter or a Secrets Manager secret)."""
        value = getattr(self, name)
        if value is not None:
            return value.get_secret_value()
        reference = os.environ.get(f"{name.upper()}_PARAM")
        if reference and in_lambda():
            if self._secrets is None:
                raise ConfigError(
                    f"{name.upper()}_PARAM: these settings were given no AWS clients to read it"
                )
            return self._secrets.read(reference)
        return None

    def provider_configured(self) -> tuple[bool, str]:
        """Whether the chosen model strategy has what it needs; the reason when not."""
        key = {
            "deepseek_single": "deepseek_api_key",
            "qwen_single_thinking": "qwen_api_key",
            "qwen_single_instruct": "qwen_api_key",
        }.get(self.model_strategy)
        if key is None:
            return True, self.model_strategy
        if getattr(self, key) is not None or os.environ.get(f"{key.upper()}_PARAM"):
            return True, self.model_strategy
        return False, f"{key.upper()} is not set for MODEL_STRATEGY={self.model_strategy}"


def load_settings(**overrides: Any) -> Settings:
    """Build settings from the environment; raise ConfigError naming every bad variable."""
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            loc = "_".join(str(part) for part in err["loc"]).upper()
            msg = err["msg"].removeprefix("Value error, ")
            if loc:
                given = err.get("input")
                shown = f" (got {given!r})" if isinstance(given, (str, int, float)) else ""
                problems.append(f"{loc}: {msg}{shown}")
            else:
                problems.append(msg)
        raise ConfigError("Invalid configuration: " + "; ".join(problems)) from None


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return load_settings()
