"""System prompts: the base prompt, the caller's role block and the rule of the turn's data fence;
and the app's context, which is the client's data and so never part of them (docs/security.md).

The request's `context` reaches the model in a user-role message of data (loop/history.py), enclosed
by the turn's fence, bounded in depth and width, at most MAX_CONTEXT_BYTES of JSON, its strings
stripped of control characters.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from rag_orchestrator.domain.callers import ADMIN, ANONYMOUS, MOD, USER, primary_role
from rag_orchestrator.domain.fences import Fence
from rag_orchestrator.sanitize import sanitize_metadata

BASE_PROMPT = (
    "You are a helpful assistant for a mobile and web app. Answer from the knowledge base results and "
    "tool results you are given; when they do not contain the answer, say so. Cite the passages you "
    "use as [source:documentId#chunkIndex]. Use tools when you need more information."
)

ROLE_BLOCKS = {
    ADMIN: (
        "The caller is an administrator. You may use the administrative tools you are offered to look "
        "at and change data across accounts. Before a change, say what will change and ask for "
        "confirmation unless the caller asked for exactly that change."
    ),
    MOD: (
        "The caller is a moderator. Help them review reported content and accounts with the tools you "
        "are offered; change something only when they ask for it, and say what you changed."
    ),
    USER: (
        "The caller is a signed-in user. Act only on the caller's own data. Use the tools you are "
        "offered to look things up instead of guessing. The service fills in the parameters that say "
        "whose data a tool touches, such as the caller's account; they are not yours to choose."
    ),
    ANONYMOUS: (
        "The caller is not signed in. You have no tools and no access to accounts, orders or any "
        "personal data: answer general questions only, and suggest signing in for anything else."
    ),
}
PREVIEW_NOTE = (
    "Some tools show the user a preview instead of returning data to you. When a tool's result is "
    "`preview_sent`, the preview is already on the user's screen: summarise it in a sentence and ask "
    "whether to go ahead; do not invent its content."
)

MAX_CONTEXT_BYTES = 4096
MAX_DEPTH = 4
MAX_ITEMS = 50
MAX_STRING = 500
MAX_KEY = 64


def role_block(roles: Sequence[str]) -> str:
    """The block of the most privileged role the caller has (`moderator` is `mod`); unknown roles read as `user`."""
    return ROLE_BLOCKS[primary_role(roles)]


def _clean(value: Any, depth: int = 0) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if depth >= MAX_DEPTH and isinstance(value, (dict, list, tuple)):
        return "[…]"
    if isinstance(value, dict):
        items = list(value.items())[:MAX_ITEMS]
        return {sanitize_metadata(key, MAX_KEY): _clean(item, depth + 1) for key, item in items}
    if isinstance(value, (list, tuple)):
        return [_clean(item, depth + 1) for item in value[:MAX_ITEMS]]
    return sanitize_metadata(value, MAX_STRING)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def context_json(context: dict[str, Any], limit: int = MAX_CONTEXT_BYTES) -> str:
    """The context as sanitized JSON of at most `limit` bytes; keys that do not fit are left out."""
    clean = _clean(context)
    text = _dumps(clean)
    if len(text.encode()) <= limit:
        return text
    kept: dict[str, Any] = {"_truncated": True}
    for key, value in clean.items():
        candidate = {**kept, key: value}
        if len(_dumps(candidate).encode()) <= limit:
            kept = candidate
    return _dumps(kept)


def context_data(context_type: str | None, context: dict[str, Any] | None) -> str | None:
    """The app's context as the JSON the model reads: `{"contextType", "context"}`, None without either."""
    if not context_type and not context:
        return None
    members = [f'"contextType":{_dumps(sanitize_metadata(context_type, MAX_KEY))}'] if context_type else []
    members += [f'"context":{context_json(context)}'] if context else []
    return "{" + ",".join(members) + "}"


def system_prompt(roles: Sequence[str], fence: Fence, *, previews: bool = False) -> str:
    """Base prompt, role block, preview note when a preview tool is offered, then the fence's rule.
    Nothing of the request but the caller's roles: the client's words and data go elsewhere."""
    blocks = [BASE_PROMPT, role_block(roles)]
    if previews:
        blocks.append(PREVIEW_NOTE)
    blocks.append(fence.rule())
    return "\n\n".join(blocks)
