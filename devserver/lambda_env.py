"""The environment a deployed function sees (Lambda's own variables plus template.yaml's Globals and the
REST function's model and guest settings), with placeholder values: for checks that load handlers the
way Lambda does, never for real calls."""

from __future__ import annotations

JWT_ISSUER = "https://issuer.example.com"
JWT_AUDIENCE = "aud"


def lambda_environment(function_dir: str, function_name: str, stage: str = "test") -> dict[str, str]:
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "TZ": ":UTC",
        "HOME": function_dir,
        # Lambda's own
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EXECUTION_ENV": "AWS_Lambda_python3.12",
        "AWS_LAMBDA_FUNCTION_NAME": f"rag-orchestrator-{stage}-{function_name}",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024",
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/rag-orchestrator-{stage}-{function_name}",
        "LAMBDA_TASK_ROOT": function_dir,
        "AWS_ACCESS_KEY_ID": "ASIATESTTESTTESTTEST",
        "AWS_SECRET_ACCESS_KEY": "test-secret-key",
        "AWS_SESSION_TOKEN": "test-session-token",
        # The template's
        "CONVERSATIONS_TABLE": f"rag-orchestrator-{stage}-conversations",
        "TRANSCRIPTS_BUCKET": f"rag-orchestrator-{stage}-transcripts",
        "DOCUMENTS_BUCKET": f"rag-orchestrator-{stage}-documents-123456789012-us-east-1",
        "ATTACHMENTS_BUCKET": f"rag-orchestrator-{stage}-attachments-123456789012-us-east-1",
        "ATTACHMENT_OCR_BACKEND": "textract",
        "ATTACHMENT_SPEECH_BACKEND": "transcribe",
        "ATTACHMENT_CAPTION_BACKEND": "none",
        "MODEL_STRATEGY": "extractive",
        "AUTH_MODE": "jwt",
        "JWT_ISSUER": JWT_ISSUER,
        "JWT_AUDIENCE": JWT_AUDIENCE,
        "CHROMA_URL": "http://127.0.0.1:9",
        "DEEPSEEK_API_KEY_PARAM": "/rag-orchestrator/deepseek-api-key",
        "QWEN_API_KEY_PARAM": "/rag-orchestrator/qwen-api-key",
        "OPENAI_COMPATIBLE_API_KEY_PARAM": "/rag-orchestrator/openai-compatible-api-key",
        "CHROMA_TOKEN_PARAM": "/rag-orchestrator/chroma-token",
        "EMBEDDING_API_KEY_PARAM": "/rag-orchestrator/embedding-api-key",
        "ALLOW_ANONYMOUS": "false",
        "GUEST_TOKEN_SECRET_PARAM": "/rag-orchestrator/guest-token-secret",
        "TURN_DEADLINE_MARGIN_SECONDS": "3",
        "POWERTOOLS_SERVICE_NAME": "rag-orchestrator",
        "POWERTOOLS_METRICS_NAMESPACE": "RagOrchestrator",
        "LOG_LEVEL": "INFO",
    }
