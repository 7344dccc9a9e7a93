"""Whether an S3 key found under a caller's prefix is that caller's (erasure, purge).

Caller ids are free strings (a JWT's `sub`, the dev header) and may hold `/` or `#`, so listing
`transcripts/<X>/` finds the keys of caller `X/b` too. The ids the service makes (conversations',
attachments': UUIDs) never hold `/`, so a key's caller part is read from the right: what lies between
the root and the last `depth` parts. A key is the caller's only when that part equals the id exactly.
"""

from __future__ import annotations

from collections.abc import Callable


def key_parts(key: str, root: str, depth: int) -> list[str] | None:
    """`<root><callerId>/<id 1>/…/<id depth>` -> [callerId, id 1, …, id depth]; None for a key not of
    that shape. `attachments/X/b/c1/a1` (depth 2) -> [`X/b`, `c1`, `a1`]."""
    if not key.startswith(root):
        return None
    parts = key[len(root) :].rsplit("/", depth)
    return parts if len(parts) == depth + 1 and all(parts) else None


def key_caller(key: str, root: str, depth: int) -> str | None:
    """The caller of such a key: `transcripts/X/b/c1.jsonl` (depth 1) -> `X/b`."""
    parts = key_parts(key, root, depth)
    return parts[0] if parts is not None else None


def owned_by(caller_id: str, root: str, depth: int) -> Callable[[str], bool]:
    """A test of keys: is this key, of the shape `key_caller` reads, the caller's exactly?"""
    return lambda key: key_caller(key, root, depth) == caller_id
