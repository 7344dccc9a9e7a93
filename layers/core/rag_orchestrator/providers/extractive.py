"""The offline strategy (`extractive`): deterministic, no model, no network.

On a new question it calls `rag_search`; then it answers by quoting the sentences of the results
that share the most words with the question, each with its `[source:documentId#chunkIndex]`.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncGenerator, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

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
from rag_orchestrator.providers.strategies import StrategyMetadata

if TYPE_CHECKING:
    from rag_orchestrator.config import Settings

RAG_SEARCH = "rag_search"
MAX_RESULTS = 5
MAX_SENTENCES = 3
MAX_SENTENCE_CHARS = 400
NOTHING_FOUND = "I could not find anything about that in the knowledge base."
INTRO = "Here is what the knowledge base says:"

_WORD = re.compile(r"[^\W_]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_STOPWORDS = frozenset(
    {
        "the", "and", "for", "are", "but", "not", "you", "your", "with", "this", "that", "from", "have",
        "has", "had", "was", "were", "will", "would", "can", "could", "what", "when", "where", "which",
        "who", "whom", "why", "how", "does", "did", "doing", "done", "into", "onto", "about", "than",
        "then", "there", "their", "they", "them", "our", "out", "any", "all", "its", "also", "been",
        "being", "some", "such", "very", "just", "more", "most", "other", "only", "own", "same", "too",
        "should", "shall", "may", "might", "must", "let", "lets", "please", "tell", "know", "want",
        "need", "like", "get", "got",
    }
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Passage:
    document_id: str
    chunk_index: int
    text: str

    @property
    def citation(self) -> str:
        return f"[source:{self.document_id}#{self.chunk_index}]"


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
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            continue
        chunk = item.get("chunkIndex", 0)
        passages.append(
            Passage(
                str(item.get("documentId", "unknown")), chunk if isinstance(chunk, int) else 0, item["text"]
            )
        )
    return passages


def parse_knowledge(content: str) -> list[Passage]:
    """The passage blocks of the answer endpoint's prompt, else `{"results": [...]}` JSON."""
    return [Passage(*found) for found in context_passages(content)] or parse_results(content)


def last_user_index(messages: list[Message]) -> int:
    return max((i for i, m in enumerate(messages) if m.role is Role.USER), default=-1)


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


def words(text: str) -> set[str]:
    found = set()
    for word in _WORD.findall(text.lower()):
        if len(word) < 3 or word in _STOPWORDS:
            continue
        if len(word) > 4 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]  # refunds ~ refund
        found.add(word)
    return found


def sentences(text: str) -> list[str]:
    found = []
    for part in _SENTENCE_END.split(text):
        part = " ".join(part.split())
        if part:
            found.append(part if len(part) <= MAX_SENTENCE_CHARS else part[: MAX_SENTENCE_CHARS - 1] + "…")
    return found


def compose_answer(question: str, passages: Iterable[Passage]) -> str:
    """The best-matching sentences with their citations, or a plain statement that nothing was found."""
    asked = words(question)
    ranked: list[tuple[int, int, int, str, Passage]] = []
    seen_passages: set[tuple[str, int]] = set()
    for rank, passage in enumerate(passages):
        if (passage.document_id, passage.chunk_index) in seen_passages:
            continue
        seen_passages.add((passage.document_id, passage.chunk_index))
        for position, sentence in enumerate(sentences(passage.text)):
            overlap = len(asked & words(sentence))
            if overlap:
                ranked.append((-overlap, rank, position, sentence, passage))
    ranked.sort(key=lambda item: item[:3])
    lines: list[str] = []
    quoted: list[set[str]] = []  # overlapping chunks repeat sentences, sometimes with a few words more
    for _, _, _, sentence, passage in ranked:
        key = words(sentence)
        if any(key <= earlier or earlier <= key for earlier in quoted):
            continue
        quoted.append(key)
        lines.append(f"- {sentence} {passage.citation}")
        if len(lines) == MAX_SENTENCES:
            break
    return "\n".join([INTRO, *lines]) if lines else NOTHING_FOUND


class ExtractiveStrategy:
    name = "extractive"
    metadata = StrategyMetadata(provider="extractive", model="extractive", reasoning=False)

    async def run_iteration(
        self, messages: list[Message], tools: list[dict[str, Any]], ctx: IterationContext
    ) -> AsyncGenerator[StrategyEvent, None]:
        start = last_user_index(messages)
        question = messages[start].content if start >= 0 else ""
        prompt_chars = sum(len(m.content) for m in messages)
        results = rag_results_after(messages, start)
        offered = {tool.get("function", tool).get("name") for tool in tools}
        if not results and ctx.allow_tools and RAG_SEARCH in offered and question.strip():
            arguments = json.dumps({"query": question, "max_results": MAX_RESULTS}, ensure_ascii=False)
            call = ToolCall(
                id=f"call_rag_{ctx.iteration}", function=FunctionCall(name=RAG_SEARCH, arguments=arguments)
            )
            yield ToolCallsComplete((call,), "", None)
            yield IterationComplete(Usage.estimate(prompt_chars, len(arguments)))
            return
        knowledge = [m for m in messages if m.role is Role.SYSTEM]
        passages = [p for m in [*results, *knowledge] for p in parse_knowledge(m.content)]
        answer = compose_answer(question, passages)
        if ctx.progressive:
            for word in re.findall(r"\s*\S+", answer):
                yield ContentChunk(word)
        yield FinalResponse(answer, None)
        yield IterationComplete(Usage.estimate(prompt_chars, len(answer)))

    async def aclose(self) -> None:
        return None


def create(settings: Settings, **_: object) -> ExtractiveStrategy:
    return ExtractiveStrategy()
