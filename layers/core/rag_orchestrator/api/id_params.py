"""The path ids of the API's FastAPI routes, checked (api/path_ids.py): a malformed one is the same 404
as an unknown one."""

from __future__ import annotations

from fastapi import Path

from rag_orchestrator.api.path_ids import checked_id, checked_message_id


def conversation_id(conversation_id: str = Path(..., max_length=100)) -> str:
    return checked_id(conversation_id)


def message_id(message_id: str = Path(..., max_length=100)) -> str:
    return checked_message_id(message_id)
