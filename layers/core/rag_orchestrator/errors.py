"""The exception tree of the core package.

    RagError                          base; carries a safe, client-facing message
    ├── ConfigError                   a setting is missing or invalid (start-up)
    ├── BadRequest                    400: input that validation let through but is still wrong
    ├── Unauthorized                  401: no caller, or a token that does not verify
    ├── Forbidden                     403: the caller may not do this
    ├── NotFound                      404
    │   ├── ConversationNotFound      also for another caller's conversation
    │   ├── AttachmentNotFound        also for another caller's or another conversation's attachment
    │   ├── TurnNotFound              a turn unknown, expired from the event log, or another caller's
    │   └── ApprovalNotFound          an approval unknown, or another caller's
    ├── Conflict                      409: a turn already running, a repeated clientMessageId
    │   ├── DuplicateClientMessage    a clientMessageId this conversation has already received
    │   ├── AttachmentNotReady        an attachment that failed, or was never uploaded
    │   ├── AttachmentChanged         an attachment whose file was replaced after it was read
    │   ├── TurnEnded                 a cancel for a turn that has already ended
    │   ├── ApprovalPending           a new message while a tool call waits for approval
    │   └── ApprovalClosed            a decision for an approval already decided, or expired
    ├── PayloadTooLarge               413: a declared attachment size over ATTACHMENT_MAX_BYTES
    ├── UnsupportedMediaType          415: a body not sent as JSON; a content type attachments do not take
    ├── BudgetExhausted               429 + Retry-After: the caller's tokens for the UTC day are spent
    ├── TooManyRequests               429 + Retry-After: a rate limit (guest tokens per address per hour)
    ├── DependencyUnavailable         503 + Retry-After: DynamoDB, S3, Chroma or the embedder failed or is throttled
    │   ├── StorageUnavailable
    │   ├── VectorStoreUnavailable
    │   ├── EmbedderUnavailable       the embedding service failed or refused (never names the key)
    │   └── IdentityUnavailable       the JWT issuer's signing keys cannot be fetched
    └── ProviderError                 502: the model provider failed (an Error event on streams)
        ├── ProviderHTTPError         a non-2xx answer; `retryable` says whether a retry may help
        ├── ProviderTimeout           total or idle timeout
        └── ProviderStreamError       a broken stream or an in-band error object

A tool's failure is not an exception here: it goes back to the model as an unsuccessful ToolResult.

`message` is always safe to show a client: no stack trace, secret, prompt, reasoning or upstream
body; it says in our words which dependency failed. An upstream's own text goes to the log only.
`retryable` says whether the same request may succeed later; `retry_after` (seconds) becomes the
`Retry-After` header of a REST answer.
"""

from __future__ import annotations

RETRY_AFTER_SECONDS = 5  # what a client is told to wait after a dependency failed or throttled


class RagError(Exception):
    status_code = 500
    error = "Internal error"
    retryable = False
    retry_after: float | None = None

    def __init__(
        self, message: str | None = None, *, retryable: bool | None = None, retry_after: float | None = None
    ) -> None:
        self.message = message or self.error
        if retryable is not None:
            self.retryable = retryable
        if retry_after is not None:
            self.retry_after = retry_after
        super().__init__(self.message)

    @property
    def public_message(self) -> str:
        """The message, and for a failed dependency whether trying again may help."""
        if self.status_code < 500 or type(self) is RagError:
            return self.message
        return f"{self.message}; " + ("try again later" if self.retryable else "trying again will not help")


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


class AttachmentNotFound(NotFound):
    error = "Attachment not found"

    def __init__(self, attachment_id: str) -> None:
        super().__init__(f"Attachment not found: {attachment_id}")
        self.attachment_id = attachment_id


class TurnNotFound(NotFound):
    error = "Turn not found"

    def __init__(self, turn_id: str) -> None:
        super().__init__(f"Turn not found: {turn_id}")
        self.turn_id = turn_id


class MessageNotFound(NotFound):
    error = "Message not found"

    def __init__(self, message_id: str) -> None:
        super().__init__(f"Message not found: {message_id}")
        self.message_id = message_id


class Conflict(RagError):
    status_code = 409
    error = "Conflict"


class NotLastExchange(Conflict):
    """Only the last exchange of a conversation can be regenerated or edited."""

    def __init__(self, message_id: str) -> None:
        super().__init__(f"Message {message_id} is not part of the conversation's last exchange")


class DuplicateClientMessage(Conflict):
    """The clientMessageId was seen before in this conversation: no second turn starts."""

    error = "Duplicate message"

    def __init__(self, client_message_id: str, message_id: str | None = None, created_at: str | None = None):
        super().__init__("This message was already received")
        self.client_message_id = client_message_id
        self.message_id = message_id  # the stored user message the earlier request created
        self.created_at = created_at


class AttachmentNotReady(Conflict):
    """The attachment cannot be used: its processing failed, or its file was never uploaded."""

    error = "Attachment not ready"


class AttachmentChanged(Conflict):
    """Another file was uploaded at the attachment's key after it was read: it is never used."""

    error = "Attachment changed"


class TurnEnded(Conflict):
    error = "Turn ended"

    def __init__(self, turn_id: str) -> None:
        super().__init__(f"The turn has already ended: {turn_id}")
        self.turn_id = turn_id


class ApprovalNotFound(NotFound):
    error = "Approval not found"

    def __init__(self, approval_id: str) -> None:
        super().__init__(f"Approval not found: {approval_id}")
        self.approval_id = approval_id


class ApprovalPending(Conflict):
    """The conversation takes no new message until its held tool call is approved or denied."""

    error = "Approval pending"

    def __init__(self, approval_id: str) -> None:
        super().__init__(f"A tool call is waiting for approval ({approval_id}): approve or deny it first")
        self.approval_id = approval_id


class ApprovalClosed(Conflict):
    error = "Approval closed"


class PayloadTooLarge(RagError):
    status_code = 413
    error = "Payload too large"


class UnsupportedMediaType(RagError):
    status_code = 415
    error = "Unsupported media type"


class BudgetExhausted(RagError):
    """Retryable at the next UTC midnight: `retry_after` is the seconds until then."""

    status_code = 429
    error = "Budget exhausted"
    retryable = True


class TooManyRequests(RagError):
    status_code = 429
    error = "Too many requests"
    retryable = True


class DependencyUnavailable(RagError):
    status_code = 503
    error = "Service unavailable"
    retryable = True
    retry_after = RETRY_AFTER_SECONDS


class StorageUnavailable(DependencyUnavailable):
    error = "Storage unavailable"


class VectorStoreUnavailable(DependencyUnavailable):
    error = "Knowledge base unavailable"


class EmbedderUnavailable(DependencyUnavailable):
    error = "Embedding service unavailable"


class IdentityUnavailable(DependencyUnavailable):
    error = "Identity provider unavailable"


class ProviderError(RagError):
    status_code = 502
    error = "Model provider error"


class ProviderHTTPError(ProviderError):
    def __init__(self, status: int, message: str | None = None, *, retry_after: float | None = None) -> None:
        super().__init__(message or f"Model provider answered HTTP {status}", retry_after=retry_after)
        self.status = status
        self.retryable = status in (408, 429, 500, 502, 503, 504)


class ProviderTimeout(ProviderError):
    error = "Model provider timed out"
    retryable = True


class ProviderStreamError(ProviderError):
    error = "Model provider stream failed"
    retryable = True
