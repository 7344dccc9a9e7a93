"""An attachment's segments as conversation fragments (retrieval/fragments.py), so `rag_search` finds them.

Indexed when the attachment becomes READY — by AttachmentFunction, or by the turn that read it on
demand — under deterministic ids: indexing the same attachment again replaces its entries. Guests'
attachments are not indexed (guests get no `rag_search`, and their conversations expire unpurged),
nor those declared in a temporary chat (nothing of it is remembered).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from rag_orchestrator.domain.attachments import Attachment
from rag_orchestrator.domain.callers import is_guest

if TYPE_CHECKING:
    from rag_orchestrator.retrieval.fragments import Fragment, FragmentIndex


def segment_fragments(attachment: Attachment) -> list[Fragment]:
    """One fragment per segment with text, its chunkIndex as the turn cites it; none for a guest's or a
    temporary chat's."""
    from rag_orchestrator.retrieval.fragments import MAX_FRAGMENT_CHARS, attachment_segment

    if is_guest(attachment.caller_id) or not attachment.remembered:
        return []
    return [
        attachment_segment(
            conversation_id=attachment.conversation_id,
            caller_id=attachment.caller_id,
            attachment_id=attachment.attachment_id,
            file_name=attachment.file_name,
            modality=segment.modality.value,
            index=number,
            text=segment.text[:MAX_FRAGMENT_CHARS],
            created_at=attachment.updated_at,
        )
        for number, segment in attachment.numbered_segments()
    ]


async def index_segments(index: FragmentIndex, attachment: Attachment) -> int:
    """Embed and upsert the attachment's fragments (blocking calls, in a worker thread); how many."""
    fragments = segment_fragments(attachment)
    if fragments:
        await asyncio.to_thread(index.add, fragments)
    return len(fragments)
