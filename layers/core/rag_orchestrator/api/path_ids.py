"""The ids routes take from their path: a well-formed one, else the same 404 as for an unknown one.

Their own module, so a route module that needs them (regenerate and edit, in the chat-stream function)
does not load another router's module. The checks are plain functions; `conversation_id` and
`message_id` are the FastAPI dependencies of the API's routes (FastAPI imported only when those are).
"""

from __future__ import annotations

import re

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


def checked_message_id(value: str) -> str:
    """A well-formed message id (a ULID), else the same 404 as for an unknown one."""
    if not _MESSAGE_ID.fullmatch(value.upper()):
        raise MessageNotFound(value)
    return value.upper()
