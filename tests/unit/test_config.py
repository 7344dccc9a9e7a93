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


def test_conversation_memory_is_on_by_default_and_never_in_the_knowledge_base(monkeypatch):
    settings = load_settings()
    assert settings.memory_enabled and settings.chroma_memory_collection == "conversation-memory"
    monkeypatch.setenv("CHROMA_MEMORY_COLLECTION", settings.chroma_collection)
    with pytest.raises(ConfigError, match="CHROMA_MEMORY_COLLECTION must differ from CHROMA_COLLECTION"):
        load_settings()
    monkeypatch.setenv("MEMORY_ENABLED", "maybe")
    with pytest.raises(ConfigError, match="MEMORY_ENABLED"):
        load_settings()
