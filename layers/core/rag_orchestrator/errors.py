"""The exception tree of the core package.

    RagError                          base; carries a safe, client-facing message
    ├── ConfigError                   a setting is missing or invalid (start-up)
    ├── BadRequest                    400: input that validation let through but is still wrong
    ├── Unauthorized                  401: no caller, or a token that does not verify
    ├── Forbidden                     403: the caller may not do this
    ├── NotFound                      404
    │   ├── ConversationNotFound      also for another caller's conversation
    │   └── TurnNotFound              a turn unknown, expired from the event log, or another caller's
    ├── Conflict                      409: a turn already running, a repeated clientMessageId
    │   ├── DuplicateClientMessage    a clientMessageId this conversation has already received
    │   └── TurnEnded                 a cancel for a turn that has already ended
    ├── DependencyUnavailable         503: DynamoDB, S3 or Chroma cannot be reached
    │   ├── StorageUnavailable
    │   ├── VectorStoreUnavailable
    │   └── EmbedderUnavailable       the embedding service failed or refused (never names the key)
    └── ProviderError                 the model provider failed (500 to REST callers, an Error event on streams)
        ├── ProviderHTTPError         a non-2xx answer; `retryable` says whether a retry may help
        ├── ProviderTimeout           total or idle timeout
        └── ProviderStreamError       a broken stream or an in-band error object

A tool's failure is not an exception here: it goes back to the model as an unsuccessful ToolResult.

`message` is always safe to show a client: no stack trace, secret, prompt or reasoning.
"""

from __future__ import annotations


class RagError(Exception):
    status_code = 500
    error = "Internal error"

    def __init__(self, message: str | None = None) -> None:
        self.message = message or self.error
        super().__init__(self.message)


class ConfigError(RagError):
    error = "Configuration error"


class BadRequest(RagError):
    status_code = 400
    error = "Bad request"


class Unauthorized(RagError):
    status_code = 401
    error = "Unauthorized"


class Forbidden(RagError):
    status_code = 403
    error = "Forbidden"


class NotFound(RagError):
    status_code = 404
    error = "Not found"


class ConversationNotFound(NotFound):
    error = "Conversation not found"

    def __init__(self, conversation_id: str) -> None:
        super().__init__(f"Conversation not found: {conversation_id}")
        self.conversation_id = conversation_id


class TurnNotFound(NotFound):
    error = "Turn not found"

    def __init__(self, turn_id: str) -> None:
        super().__init__(f"Turn not found: {turn_id}")
        self.turn_id = turn_id


class Conflict(RagError):
    status_code = 409
    error = "Conflict"


class DuplicateClientMessage(Conflict):
    """The clientMessageId was seen before in this conversation: no second turn starts."""

    error = "Duplicate message"

    def __init__(self, client_message_id: str, message_id: str | None = None, created_at: str | None = None):
        super().__init__("This message was already received")
        self.client_message_id = client_message_id
        self.message_id = message_id  # the stored user message the earlier request created
        self.created_at = created_at


class TurnEnded(Conflict):
    error = "Turn ended"

    def __init__(self, turn_id: str) -> None:
        super().__init__(f"The turn has already ended: {turn_id}")
        self.turn_id = turn_id


class DependencyUnavailable(RagError):
    status_code = 503
    error = "Service unavailable"


class StorageUnavailable(DependencyUnavailable):
    error = "Storage unavailable"


class VectorStoreUnavailable(DependencyUnavailable):
    error = "Knowledge base unavailable"


class EmbedderUnavailable(DependencyUnavailable):
    error = "Embedding service unavailable"


class ProviderError(RagError):
    status_code = 500
    error = "Model provider error"


class ProviderHTTPError(ProviderError):
    def __init__(self, status: int, message: str | None = None, *, retry_after: float | None = None) -> None:
        super().__init__(message or f"Model provider answered HTTP {status}")
        self.status = status
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        return self.status in (408, 429, 500, 502, 503, 504)


class ProviderTimeout(ProviderError):
    error = "Model provider timed out"


class ProviderStreamError(ProviderError):
    error = "Model provider stream failed"
