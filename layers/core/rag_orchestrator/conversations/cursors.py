"""Opaque page cursors: a signed position, bound to the query that produced it.

The signature covers the scope (caller, filter, conversation), so a cursor replayed by another
caller or on another query fails verification: a bad, forged or foreign cursor is a 400.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from datetime import datetime
from typing import Any

from rag_orchestrator.config import Settings
from rag_orchestrator.conversations.keys import iso
from rag_orchestrator.errors import BadRequest

MAX_CURSOR_CHARS = 2048
_MAC_BYTES = 16


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def cursor_key(settings: Settings) -> bytes:
    """CURSOR_SECRET when set; else a key derived from the table name.

    Isolation never rests on this key alone: stores also check that a position lies in the
    caller's own partition.
    """
    secret = settings.secret("cursor_secret")
    material = secret or f"rag-orchestrator/cursor/{settings.conversations_table or 'memory'}"
    return hashlib.sha256(material.encode()).digest()


def actor_key(settings: Settings) -> bytes:
    """AUDIT_ACTOR_SECRET when set; else derived from CURSOR_SECRET, else from the table name
    (docs/privacy.md): a deployment with a cursor secret pseudonymises under a key no one can guess."""
    if secret := settings.secret("audit_actor_secret"):
        material = secret
    elif cursor := settings.secret("cursor_secret"):
        material = f"rag-orchestrator/actor/{cursor}"
    else:
        material = f"rag-orchestrator/actor/{settings.conversations_table or 'memory'}"
    return hashlib.sha256(material.encode()).digest()


class CursorCodec:
    def __init__(self, key: bytes) -> None:
        self._key = key

    def _mac(self, scope: str, body: str) -> bytes:
        return hmac.new(self._key, f"{scope}\n{body}".encode(), hashlib.sha256).digest()[:_MAC_BYTES]

    def encode(self, position: dict[str, Any], scope: str) -> str:
        body = _b64(json.dumps(position, separators=(",", ":"), sort_keys=True).encode())
        return f"{body}.{_b64(self._mac(scope, body))}"

    def decode(self, cursor: str, scope: str) -> dict[str, Any]:
        """The position a cursor holds; BadRequest unless it was issued for this very scope."""
        body, _, mac = cursor.partition(".")
        if not body or not mac or len(cursor) > MAX_CURSOR_CHARS:
            raise BadRequest("Invalid cursor")
        try:
            valid = hmac.compare_digest(_unb64(mac), self._mac(scope, body))
            position = json.loads(_unb64(body)) if valid else None
        except (binascii.Error, ValueError):
            position = None
        if not isinstance(position, dict):
            raise BadRequest("Invalid cursor")
        return position


def feedback_scope(since: datetime, rating: str | None) -> str:
    """What a feedback listing's cursor is bound to: the same `since` and rating filter."""
    return f"feedback|{iso(since)}|{rating or '*'}"
