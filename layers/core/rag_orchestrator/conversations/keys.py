"""Keys and scopes shared by the stores: index sort keys in time order, and what a page cursor is bound to."""

from __future__ import annotations

from datetime import datetime

from rag_orchestrator.domain.base import in_utc


def iso(moment: datetime) -> str:
    """Fixed-width UTC ISO-8601, so index sort keys order as time does (isoformat: strftime's %Y
    drops a year's leading zeros)."""
    return in_utc(moment).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def activity_key(moment: datetime, conversation_id: str) -> str:
    """GSI1SK: most recent activity, then the id to keep keys unique."""
    return f"{iso(moment)}#{conversation_id}"


def messages_scope(conversation_id: str, caller_id: str, all_versions: bool = False) -> str:
    return f"messages|{conversation_id}|{caller_id}" + ("|all" if all_versions else "")
