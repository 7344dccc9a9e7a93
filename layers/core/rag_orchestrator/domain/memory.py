"""What the service remembers of a caller, as the caller lists it (docs/memory.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from rag_orchestrator.domain.base import CamelModel

Kind = Literal["said", "answered"]


class MemoryFragment(CamelModel):
    """One thing remembered: what the caller said in a turn, or the answer they were given."""

    fragment_id: str
    kind: Kind
    text: str
    conversation_id: str
    created_at: datetime
