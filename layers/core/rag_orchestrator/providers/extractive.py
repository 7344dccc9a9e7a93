"""The offline strategy (`extractive`): deterministic, no model, no network.

On a new question it calls `rag_search`; then it answers by quoting the sentences of the results (and of
the text read from the message's attachments) that answer best (`sentence_picker`), each quote followed
by its `[source:documentId#chunkIndex]`, or says that nothing was found. Of conversation memory it may
quote what the user said, introduced as "You said on <date>: ", and never an earlier answer (an answer
quoting an answer echoes). A follow-up ("And on Saturdays?") is searched and read with the earlier
questions' words it points back to (`text/follow_ups.py`).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any

from rag_orchestrator.domain.attachment_formats import attachment_passages, question_of
from rag_orchestrator.domain.fences import blocks, is_service_data
from rag_orchestrator.domain.messages import FunctionCall, Message, Role, ToolCall
from rag_orchestrator.domain.passage_formats import context_passages
from rag_orchestrator.providers.events import (
    ContentChunk,
    FinalResponse,
    IterationComplete,
    IterationContext,
    StrategyEvent,
    ToolCallsComplete,
    Usage,
)
from rag_orchestrator.providers.sentence_picker import EmbedBatch, Passage, compose_answer
from rag_orchestrator.providers.sentence_rules import wants_steps
from rag_orchestrator.providers.sentence_scoring import read_question
from rag_orchestrator.providers.strategies import StrategyMetadata
from rag_orchestrator.text.follow_ups import previous_question, standalone

if TYPE_CHECKING:
    from rag_orchestrator.config import Settings

RAG_SEARCH = "rag_search"
MAX_RESULTS = 5
# The title of each passage block in the answer endpoint's prompt (domain/passage_formats.py).
_BLOCK_TITLE = re.compile(r'<passage\b[^>]*?\bcitation="([^"]*)"[^>]*?\btitle="([^"]*)"')
SAID, ANSWERED = "said", "answered"  # conversation memory's kinds (retrieval/fragments.py)


def parse_results(content: str) -> list[Passage]:
    """Passages of a `{"results": [...]}` JSON text, which may follow a line of prose; else none."""
    start = content.find("{")
    if start < 0:
        return []
    try:
        data, _ = json.JSONDecoder().raw_decode(content[start:])
    except ValueError:
        return []
    results = data.get("results") if isinstance(data, dict) else None
    passages = []
    for item in results if isinstance(results, list) else ():
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("text"), str)
            or item.get("kind") == ANSWERED
        ):
            continue
        chunk = item.get("chunkIndex", 0)
        title = item.get("title")
        said = item.get("kind") == SAID  # its title is the date it was said, which labels the quote
        label = f"{title}: " if said else ""
        passages.append(
            Passage(
                str(item.get("documentId", "unknown")),
                chunk if isinstance(chunk, int) else 0,
                item["text"],
                title=title if isinstance(title, str) and not said else "",
                label=label,
            )
        )
    return passages


def parse_knowledge(content: str) -> list[Passage]:
    """The passage blocks of the answer endpoint's prompt, else `{"results": [...]}` JSON."""
    titles = {html.unescape(c): html.unescape(t) for c, t in _BLOCK_TITLE.findall(content)}
    blocks = [
        Passage(doc, index, text, title=titles.get(f"[source:{doc}#{index}]", ""))
        for doc, index, text in context_passages(content)
    ]
    return blocks or parse_results(content)


def said_by_user(message: Message) -> bool:
    """A user-role message the user wrote: not the app's data sent with the question, nor the summary."""
    return message.role is Role.USER and not is_service_data(message.content)


def last_user_index(messages: list[Message]) -> int:
    return max((i for i, m in enumerate(messages) if said_by_user(m)), default=-1)


def rag_results_after(messages: list[Message], start: int) -> list[Message]:
    """The rag_search tool results among messages[start + 1:]."""
    rag_ids = {
        call.id
        for m in messages[start + 1 :]
        if m.role is Role.ASSISTANT
        for call in m.tool_calls or ()
        if call.function.name == RAG_SEARCH
    }
    return [
        m
        for m in messages[start + 1 :]
        if m.role is Role.TOOL and (m.tool_name == RAG_SEARCH or m.tool_call_id in rag_ids)
    ]


class ExtractiveStrategy:
    name = "extractive"
    metadata = StrategyMetadata(provider="extractive", model="extractive", reasoning=False)

    def __init__(self, embed: EmbedBatch | None = None) -> None:
        self.embed = embed  # scores sentences by embedding too; None: by shared words alone

    async def run_iteration(
        self, messages: list[Message], tools: list[dict[str, Any]], ctx: IterationContext
    ) -> AsyncGenerator[StrategyEvent, None]:
        start = last_user_index(messages)
        asked = messages[start].content if start >= 0 else ""
        question = question_of(asked)
        earlier = previous_question([question_of(m.content) for m in messages[:start] if said_by_user(m)])
        prompt_chars = sum(len(m.content) for m in messages)
        results = rag_results_after(messages, start)
        offered = {tool.get("function", tool).get("name") for tool in tools}
        if not results and ctx.allow_tools and RAG_SEARCH in offered and question.strip():
            query = standalone(question, earlier)
            arguments = json.dumps({"query": query, "max_results": MAX_RESULTS}, ensure_ascii=False)
            call = ToolCall(
                id=f"call_rag_{ctx.iteration}", function=FunctionCall(name=RAG_SEARCH, arguments=arguments)
            )
            yield ToolCallsComplete((call,), "", None)
            yield IterationComplete(Usage.estimate(prompt_chars, len(arguments)))
            return
        # The answer prompt's passages (a system message), the initial search's (the app's data message).
        knowledge = [m.content for m in messages if m.role is Role.SYSTEM]
        knowledge += [b for m in messages if m.role is Role.USER for b in blocks(m.content, "knowledge")]
        # The message's own files first: rag_search may return their segments too (conversation
        # memory), and a passage counts once, where it ranks first.
        passages = [Passage(*found, whole=True) for found in attachment_passages(asked)]
        passages += [p for text in [*(m.content for m in results), *knowledge] for p in parse_knowledge(text)]
        reading = read_question(question, earlier, steps=wants_steps(question))
        answer = compose_answer(reading, passages, self.embed)
        if ctx.progressive:
            for word in re.findall(r"\s*\S+", answer):
                yield ContentChunk(word)
        yield FinalResponse(answer, None)
        yield IterationComplete(Usage.estimate(prompt_chars, len(answer)))

    async def aclose(self) -> None:
        return None


def create(settings: Settings, **_: object) -> ExtractiveStrategy:
    return ExtractiveStrategy(sentence_embedder(settings))


def sentence_embedder(settings: Settings) -> EmbedBatch:
    """The hashing embedder: offline and cheap, so scoring sentences never waits for a service."""
    from rag_orchestrator.text.hashing import HashingEmbedder

    return HashingEmbedder(settings.embedding_dimensions).embed_batch
