"""Conversations and their messages (docs/conversations.md), as stored and as shown to clients."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import Field, StrictBool, field_validator, model_validator

from rag_orchestrator.domain.attachments import MAX_PER_TURN, well_formed_ids
from rag_orchestrator.domain.base import CamelModel, new_id, utcnow
from rag_orchestrator.domain.events import ApprovalRequested, FinishReason
from rag_orchestrator.domain.feedback import Feedback
from rag_orchestrator.domain.ids import sortable_id
from rag_orchestrator.domain.messages import Message, Role, ToolCall
from rag_orchestrator.domain.passages import SourceWithSnippet
from rag_orchestrator.domain.text import ClientBody, plain_labels, plain_optional

MAX_ID_LENGTH = 100
MAX_MESSAGE_CHARS = 32_000
MAX_METADATA_ENTRIES = 20
MAX_TITLE_CHARS = 120
CHARS_PER_TOKEN = 4
MEMORY = "false: a temporary chat (nothing of it is remembered, nothing is recalled into it)"


def estimate_tokens(text: str) -> int:
    """About four characters a token, at least one: for when a provider reports no usage."""
    return max(1, len(text) // CHARS_PER_TOKEN)


class ConversationStatus(StrEnum):
    ACTIVE = "ACTIVE"
    ARCHIVED = "ARCHIVED"
    DELETED = "DELETED"


class Conversation(CamelModel):
    conversation_id: str = Field(default_factory=new_id)
    caller_id: str
    user_id: str | None = None
    account_id: str | None = None
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    last_message_at: datetime | None = None
    message_count: int = 0
    tool_calls_count: int = 0
    total_tokens: int = 0
    status: ConversationStatus = ConversationStatus.ACTIVE
    s3_key: str | None = None
    title: str | None = None
    metadata: dict[str, str] = Field(default_factory=dict)
    memory: bool = True  # false: a temporary chat, nothing of it remembered, nothing recalled into it
    summary: str | None = None  # the running summary of the messages through `summarized_through`
    summarized_through: str | None = None  # the id of the last message the summary folds in
    archived_at: datetime | None = None
    deleted_at: datetime | None = None


class ConversationMessage(CamelModel):
    """A stored message. `reasoning` is stored for replay and never leaves the service."""

    message_id: str = Field(default_factory=sortable_id)
    conversation_id: str
    role: Role
    content: str
    tool_call_id: str | None = None
    tool_name: str | None = None
    tool_calls: list[ToolCall] | None = None
    reasoning: str | None = None
    token_count: int | None = None
    created_at: datetime = Field(default_factory=utcnow)
    client_message_id: str | None = None
    interrupted: bool = False
    metadata: dict[str, str] | None = None  # the app's, from the chat request (user messages)
    attachment_ids: list[str] | None = None  # a user message's attachments: their ids, never their text
    superseded_by: str | None = None  # an earlier version: the id of the message that replaced it
    feedback: Feedback | None = None  # the owner's rating of an assistant message

    @classmethod
    def of(
        cls,
        conversation_id: str,
        message: Message,
        token_count: int | None = None,
        *,
        client_message_id: str | None = None,
        metadata: dict[str, str] | None = None,
        attachment_ids: list[str] | None = None,
    ) -> ConversationMessage:
        """A Message as a store keeps it: a time-ordered id and a token count (estimated when not given)."""
        return cls(
            conversation_id=conversation_id,
            role=message.role,
            content=message.content,
            tool_call_id=message.tool_call_id,
            tool_name=message.tool_name,
            tool_calls=message.tool_calls,
            reasoning=message.reasoning,
            token_count=token_count if token_count is not None else estimate_tokens(message.content),
            client_message_id=client_message_id,
            metadata=metadata or None,
            attachment_ids=attachment_ids or None,
        )

    def to_message(self) -> Message:
        return Message(
            role=self.role,
            content=self.content,
            tool_call_id=self.tool_call_id,
            tool_name=self.tool_name,
            tool_calls=self.tool_calls,
            reasoning=self.reasoning,
        )


class MessageResponse(CamelModel):
    """A message as a client sees it: no reasoning field exists here, so none can leak."""

    message_id: str
    role: Role
    content: str
    tool_call_id: str | None = None
    tool_name: str | None = None
    tool_calls: list[ToolCall] | None = None
    token_count: int | None = None
    created_at: datetime
    client_message_id: str | None = None
    interrupted: bool = False
    metadata: dict[str, str] | None = None
    attachment_ids: list[str] | None = None
    superseded_by: str | None = None
    feedback: Feedback | None = None

    @classmethod
    def of(cls, message: ConversationMessage) -> MessageResponse:
        return cls.model_validate(message.model_dump(exclude={"reasoning", "conversation_id"}))


class ConversationResponse(CamelModel):
    conversation_id: str
    caller_id: str
    user_id: str | None
    account_id: str | None
    status: ConversationStatus
    message_count: int
    tool_calls_count: int
    total_tokens: int
    created_at: datetime
    updated_at: datetime
    last_message_at: datetime | None
    s3_key: str | None = None
    title: str | None = None
    metadata: dict[str, str] = Field(default_factory=dict)
    memory: bool = True
    summary: str | None = Field(None, description="The running summary of the earlier messages (compaction)")
    summarized_through: str | None = Field(
        None, description="The id of the last message the summary folds in"
    )

    @classmethod
    def of(cls, conversation: Conversation) -> ConversationResponse:
        return cls.model_validate(conversation.model_dump())


def _small_metadata(value: dict[str, str]) -> dict[str, str]:
    for key, item in value.items():
        if not key or len(key) > 64 or len(item) > 1024:
            raise ValueError("metadata keys are 1-64 characters and values at most 1024")
    return value


def _plain_keys(value: dict[str, str] | None) -> dict[str, str] | None:
    return None if value is None else plain_labels(value)


def not_blank(value: str) -> str:
    """A message's rule: some text besides white space."""
    if not value.strip():
        raise ValueError("Message cannot be blank")
    return value


def _strip_optional(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip()
    if not value:
        raise ValueError("must not be blank")
    return value


class CreateConversationRequest(ClientBody):
    model_config = ClientBody.model_config | {"extra": "forbid"}

    caller_id: str | None = Field(
        None, max_length=MAX_ID_LENGTH, description="Optional; when given, the authenticated caller's id"
    )
    user_id: str | None = Field(None, max_length=MAX_ID_LENGTH)
    account_id: str | None = Field(None, max_length=MAX_ID_LENGTH)
    initial_message: str | None = Field(None, max_length=MAX_MESSAGE_CHARS)
    metadata: dict[str, str] = Field(default_factory=dict, max_length=MAX_METADATA_ENTRIES)
    title: str | None = Field(None, max_length=MAX_TITLE_CHARS)
    memory: StrictBool = Field(True, description=MEMORY)

    _strip = field_validator("user_id", "account_id", "initial_message", "title")(_strip_optional)
    _metadata = field_validator("metadata")(_small_metadata)
    _labels = field_validator("caller_id", "user_id", "account_id", "title")(plain_optional)
    _keys = field_validator("metadata")(plain_labels)


class UpdateConversationRequest(ClientBody):
    """PATCH: what is given replaces what is stored; what is left out stays."""

    model_config = ClientBody.model_config | {"extra": "forbid"}

    title: str | None = Field(None, max_length=MAX_TITLE_CHARS)
    metadata: dict[str, str] | None = Field(None, max_length=MAX_METADATA_ENTRIES)
    memory: StrictBool | None = Field(None, description=MEMORY)

    _strip = field_validator("title")(_strip_optional)
    _labels = field_validator("title")(plain_optional)
    _keys = field_validator("metadata")(_plain_keys)

    @model_validator(mode="after")
    def _something(self) -> UpdateConversationRequest:
        if self.title is None and self.metadata is None and self.memory is None:
            raise ValueError("give a title, metadata, memory, or some of them")
        return self

    @field_validator("metadata")
    @classmethod
    def _metadata(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        return None if value is None else _small_metadata(value)


def new_conversation(
    request: CreateConversationRequest, caller_id: str
) -> tuple[Conversation, list[ConversationMessage]]:
    """The conversation a create request asks for, and its first message when `initialMessage` is given."""
    now = utcnow()
    conversation = Conversation(
        caller_id=caller_id,
        user_id=request.user_id,
        account_id=request.account_id,
        metadata=request.metadata,
        title=request.title,
        memory=request.memory,
        created_at=now,
        updated_at=now,
    )
    first = []
    if request.initial_message:
        opening = Message(role=Role.USER, content=request.initial_message)
        first.append(ConversationMessage.of(conversation.conversation_id, opening))
    return conversation, first


class ChatRequest(ClientBody):
    model_config = ClientBody.model_config | {"extra": "forbid"}

    message: str = Field(..., min_length=1, max_length=MAX_MESSAGE_CHARS)
    context_type: str | None = Field(None, max_length=64)
    context: dict[str, Any] | None = None
    metadata: dict[str, str] = Field(default_factory=dict, max_length=MAX_METADATA_ENTRIES)
    client_message_id: str | None = Field(None, min_length=1, max_length=MAX_ID_LENGTH)
    attachment_ids: list[str] = Field(  # at most MAX_PER_TURN once repeats are dropped (well_formed_ids)
        default_factory=list,
        description=f"Attachments of this conversation whose text the model reads with the message "
        f"(at most {MAX_PER_TURN}; a repeat is sent once)",
    )

    _metadata = field_validator("metadata")(_small_metadata)
    _labels = field_validator("client_message_id", "context_type")(plain_optional)
    _keys = field_validator("metadata")(plain_labels)

    @field_validator("attachment_ids")
    @classmethod
    def _attachment_ids(cls, value: list[str]) -> list[str]:
        return well_formed_ids(value)

    _not_blank = field_validator("message")(not_blank)


def joined_context(
    context: dict[str, Any] | None, user_id: str | None, account_id: str | None
) -> dict[str, Any] | None:
    """A chat body's `userId` and `accountId` (as older clients send them) in the turn's context under
    those names, where tools read them; a context that has them already keeps its own."""
    named = {"userId": user_id, "accountId": account_id}
    joined = {key: value for key, value in named.items() if value is not None}
    return {**joined, **(context or {})} if joined else context


class ChatResponse(CamelModel):
    conversation_id: str
    turn_id: str | None = None
    message: str
    role: Role = Role.ASSISTANT
    message_id: str | None = None
    tool_calls_count: int = 0
    iterations_used: int = 0
    tokens_used: int = 0
    finish_reason: FinishReason = "stop"
    sources: list[SourceWithSnippet] = Field(default_factory=list)
    approval: ApprovalRequested | None = None  # with finishReason awaiting_approval: what to decide
    timestamp: datetime = Field(default_factory=utcnow)


class Page[T](CamelModel):
    items: list[T]
    next_cursor: str | None = None
