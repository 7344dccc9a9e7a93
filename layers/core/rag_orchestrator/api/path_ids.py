"""The ids routes take from their path: a well-formed one, else the same 404 as for an unknown one.

Their own module, so a route module that needs them (regenerate and edit, in the chat-stream function)
does not load another router's module, whose routes FastAPI builds as it is imported.
"""

from __future__ import annotations

import re

from fastapi import Path

from rag_orchestrator.errors import ConversationNotFound, MessageNotFound

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_MESSAGE_ID = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}")


def is_uuid(value: str) -> bool:
    """A lower-case UUID, as the service makes every id but messages' (erasures, exports, shares)."""
    return _UUID.fullmatch(value) is not None


def checked_id(value: str) -> str:
    """A well-formed conversation id, else the same 404 as for an unknown one."""
    if not _UUID.fullmatch(value.lower()):
        raise ConversationNotFound(value)
    return value.lower()


def conversation_id(conversation_id: str = Path(..., max_length=100)) -> str:
    return checked_id(conversation_id)


def message_id(message_id: str = Path(..., max_length=100)) -> str:
    """A well-formed message id (a ULID), else the same 404 as for an unknown one."""
    if not _MESSAGE_ID.fullmatch(message_id.upper()):
        raise MessageNotFound(message_id)
    return message_id.upper()
