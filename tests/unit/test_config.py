import pytest

from rag_orchestrator.config import load_settings
from rag_orchestrator.errors import ConfigError


def test_defaults_are_the_local_embedded_stack():
    settings = load_settings()
    assert settings.model_strategy == "extractive"
    assert settings.loop_max_iterations == 10
    assert settings.conversation_rolling_window == 20
    assert settings.rag_topk_default == 5
    assert settings.provider_configured() == (True, "extractive")


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("LOOP_MAX_ITERATIONS", "abc"),
        ("LOOP_MAX_ITERATIONS", "0"),
        ("MODEL_STRATEGY", "gpt_magic"),
        ("RAG_SIMILARITY_THRESHOLD", "1.5"),
        ("CONVERSATION_STORAGE", "sqlite"),
        ("PORT", "70000"),
        ("ATTACHMENT_ALLOWED_TYPES", "image/png,image/gif"),
        ("RETRIEVAL_MODE", "semantic"),
        ("RETRIEVAL_CANDIDATES", "0"),
        ("RERANKER", "cohere"),
        ("RERANKER_TIMEOUT_SECONDS", "0"),
        # an endpoint that is not an http(s) URL with a host fails at start, not at every request
        ("RERANKER_URL", "http://[::1/rerank"),
        ("RERANKER_URL", "http://bad host/v1/rerank"),
        ("RERANKER_URL", "rerank.example.com/v1/rerank"),
        ("OPENAI_COMPATIBLE_BASE_URL", "ftp://models.example.com/v1"),
        ("EMBEDDING_BASE_URL", "http://:8080/v1"),
        ("CHROMA_URL", "http://127.0.0.1:99999"),
        ("JWT_JWKS_URL", "issuer.example.com/jwks.json"),
    ],
)
def test_a_bad_setting_is_named(monkeypatch, variable, value):
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError, match=variable):
        load_settings()


def test_a_missing_required_setting_is_named(monkeypatch):
    monkeypatch.setenv("CONVERSATION_STORAGE", "dynamodb")
    monkeypatch.delenv("CONVERSATIONS_TABLE")
    with pytest.raises(ConfigError, match="CONVERSATIONS_TABLE"):
        load_settings()


def test_retrieval_defaults_to_hybrid_reranked_locally_and_an_http_reranker_needs_its_url(monkeypatch):
    settings = load_settings()
    assert (settings.retrieval_mode, settings.reranker, settings.retrieval_candidates) == (
        "hybrid",
        "local",
        20,
    )
    monkeypatch.setenv("RERANKER", "http")
    with pytest.raises(ConfigError, match="RERANKER_URL"):
        load_settings()
    monkeypatch.setenv("RERANKER_URL", "https://rerank.example/v1/rerank")
    assert load_settings().reranker == "http"


def test_jwt_mode_needs_an_issuer_and_derives_the_jwks_url(monkeypatch):
    monkeypatch.setenv("AUTH_MODE", "jwt")
    with pytest.raises(ConfigError, match="JWT_ISSUER"):
        load_settings()
    monkeypatch.setenv("JWT_ISSUER", "https://issuer.example.com/pool/")
    assert load_settings().jwks_url == "https://issuer.example.com/pool/.well-known/jwks.json"


def test_dev_auth_is_refused_inside_lambda(monkeypatch):
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "rag-api")
    with pytest.raises(ConfigError, match="AUTH_MODE=dev"):
        load_settings()


def test_keyed_strategies_report_a_missing_key(monkeypatch):
    monkeypatch.setenv("MODEL_STRATEGY", "deepseek_single")
    ok, reason = load_settings().provider_configured()
    assert not ok and "DEEPSEEK_API_KEY" in reason
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")
    assert load_settings().provider_configured() == (True, "deepseek_single")
    assert "sk-test" not in repr(load_settings())


def test_openai_compatible_strategy_needs_url_and_model(monkeypatch):
    monkeypatch.setenv("MODEL_STRATEGY", "openai_compatible")
    with pytest.raises(ConfigError, match="OPENAI_COMPATIBLE_BASE_URL"):
        load_settings()


def test_attachment_engines_need_what_they_call(monkeypatch):
    monkeypatch.setenv("ATTACHMENT_CAPTION_BACKEND", "openai_compatible")
    with pytest.raises(ConfigError, match="ATTACHMENT_CAPTION_BASE_URL"):
        load_settings()
    monkeypatch.setenv("ATTACHMENT_CAPTION_BASE_URL", "http://vision.internal/v1")
    with pytest.raises(ConfigError, match="ATTACHMENT_CAPTION_MODEL"):
        load_settings()
    monkeypatch.delenv("ATTACHMENT_CAPTION_BACKEND")
    monkeypatch.setenv("ATTACHMENT_SPEECH_BACKEND", "whisper")
    with pytest.raises(ConfigError, match="ATTACHMENT_WHISPER_BASE_URL"):
        load_settings()
    for variable, value in (("ATTACHMENT_OCR_BACKEND", "tesseract"), ("ATTACHMENT_MAX_BYTES", "0")):
        monkeypatch.setenv(variable, value)
        with pytest.raises(ConfigError, match=variable):
            load_settings()
        monkeypatch.delenv(variable)


def test_guests_inside_lambda_need_a_signing_secret(in_lambda, monkeypatch):
    monkeypatch.setenv("ALLOW_ANONYMOUS", "true")
    with pytest.raises(ConfigError, match="GUEST_TOKEN_SECRET_PARAM"):
        load_settings()
    monkeypatch.setenv("GUEST_TOKEN_SECRET_PARAM", "/rag-orchestrator/guest-token-secret")
    assert load_settings().allow_anonymous
    monkeypatch.setenv("GUEST_TOKEN_SECRET", "too short")
    with pytest.raises(ConfigError, match="GUEST_TOKEN_SECRET"):
        load_settings()


def test_kb_writer_roles_are_roles_as_callers_carry_them(monkeypatch):
    assert load_settings().kb_writers == ("admin",)
    monkeypatch.setenv("KB_WRITER_ROLES", "admin, moderator,,editor")
    assert load_settings().kb_writers == ("admin", "mod", "editor")


def test_waits_on_dependencies_are_short_by_default_and_set_by_configuration(monkeypatch):
    settings = load_settings()
    assert (settings.chroma_timeout_seconds, settings.embedding_timeout_seconds) == (3.0, 5.0)
    assert settings.jwks_timeout_seconds == 3.0
    monkeypatch.setenv("CHROMA_TIMEOUT_SECONDS", "1.5")
    monkeypatch.setenv("JWKS_TIMEOUT_SECONDS", "0.5")
    settings = load_settings()
    assert (settings.chroma_timeout_seconds, settings.jwks_timeout_seconds) == (1.5, 0.5)
    monkeypatch.setenv("CHROMA_TIMEOUT_SECONDS", "0")
    with pytest.raises(ConfigError, match="CHROMA_TIMEOUT_SECONDS"):
        load_settings()


def test_an_empty_variable_is_unset_as_the_template_passes_blank_parameters(monkeypatch):
    for name in ("EMBEDDING_DIMENSIONS", "TOOL_CATALOG_PATH", "TOOL_SECRETS_PREFIX", "JWT_JWKS_URL"):
        monkeypatch.setenv(name, "")
    settings = load_settings()
    assert settings.embedding_dimensions is None and settings.tool_catalog_path is None
    assert settings.tool_secrets_prefix is None and settings.jwt_jwks_url is None


@pytest.mark.parametrize("prefix", ["no-slash/", "/no-trailing-slash", "/a b/"])
def test_the_tool_secrets_prefix_is_a_parameter_path(monkeypatch, prefix):
    monkeypatch.setenv("TOOL_SECRETS_PREFIX", prefix)
    with pytest.raises(ConfigError, match="TOOL_SECRETS_PREFIX"):
        load_settings()


def test_conversation_memory_is_on_by_default_and_never_in_the_knowledge_base(monkeypatch):
    settings = load_settings()
    assert settings.memory_enabled and settings.chroma_memory_collection == "conversation-memory"
    monkeypatch.setenv("CHROMA_MEMORY_COLLECTION", settings.chroma_collection)
    with pytest.raises(ConfigError, match="CHROMA_MEMORY_COLLECTION must differ from CHROMA_COLLECTION"):
        load_settings()
    monkeypatch.setenv("MEMORY_ENABLED", "maybe")
    with pytest.raises(ConfigError, match="MEMORY_ENABLED"):
        load_settings()


def test_attachment_types_default_to_every_readable_type_or_the_listed_subset(monkeypatch):
    every = load_settings().attachment_types
    assert "image/png" in every and "application/pdf" in every and "audio/wav" in every
    monkeypatch.setenv("ATTACHMENT_ALLOWED_TYPES", " Image/PNG , application/pdf")
    assert load_settings().attachment_types == ("image/png", "application/pdf")


@pytest.mark.parametrize(
    "reference",
    ["deepseek-key", "ssm:/rag/key", "secretsmanager:", "arn:aws:ssm:us-east-1:123456789012:parameter/k"],
)
def test_a_secret_reference_of_no_known_form_is_named(monkeypatch, reference):
    monkeypatch.setenv("DEEPSEEK_API_KEY_PARAM", reference)
    with pytest.raises(ConfigError, match=r"DEEPSEEK_API_KEY_PARAM: .* is neither an SSM parameter name"):
        load_settings()
