"""A strategy over an OpenAI-compatible endpoint: the dialects differ only in what they configure."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from contextlib import aclosing
from typing import Any

from rag_orchestrator.domain.messages import Message, ToolCall
from rag_orchestrator.observability import audit_thinking, logger
from rag_orchestrator.providers.events import (
    ContentChunk,
    FinalResponse,
    IterationComplete,
    IterationContext,
    StrategyEvent,
    StreamingMode,
    ToolCallsComplete,
    Usage,
)
from rag_orchestrator.providers.openai_compat import ChatClient
from rag_orchestrator.providers.openai_wire import (
    ChunkDelta,
    ToolCallAccumulator,
    arguments_are_valid,
    map_messages,
    map_tools,
    prompt_chars,
)
from rag_orchestrator.providers.reasoning import ThinkTagSplitter, sanitize_reasoning
from rag_orchestrator.providers.strategies import StrategyMetadata


class IterationAssembler:
    """Turns the deltas of one response into strategy events; pure, so it is tested without a server."""

    def __init__(self, mode: StreamingMode, *, split_think_tags: bool = False) -> None:
        self._progressive = mode is StreamingMode.PROGRESSIVE
        self._splitter = ThinkTagSplitter() if split_think_tags else None
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._tools = ToolCallAccumulator()
        self._usage: Usage | None = None
        self._finish_reason: str | None = None
        self.calls: list[ToolCall] = []

    @property
    def reasoning(self) -> str | None:
        return "".join(self._reasoning) or None

    def feed(self, delta: ChunkDelta) -> list[StrategyEvent]:
        content, reasoning = delta.content, delta.reasoning
        if self._splitter is not None and content:
            content, inline = self._splitter.feed(content)
            reasoning += inline
        for fragment in delta.tool_calls:
            self._tools.add(fragment)
        if delta.usage is not None:
            self._usage = delta.usage
        if delta.finish_reason is not None:
            self._finish_reason = delta.finish_reason
        return self._chunks(content, reasoning)

    def _chunks(self, content: str, reasoning: str) -> list[StrategyEvent]:
        events: list[StrategyEvent] = []
        if reasoning:
            self._reasoning.append(reasoning)
        if content:
            self._content.append(content)
            if self._progressive:
                events.append(ContentChunk(content))
        return events

    def finish(self, prompt_chars: int) -> list[StrategyEvent]:
        """The closing events: the tool calls or the answer, then the iteration's usage."""
        events: list[StrategyEvent] = []
        if self._splitter is not None:
            events += self._chunks(*self._splitter.flush())
        content, reasoning = "".join(self._content), self.reasoning
        calls = self.calls = self._tools.complete()
        for call in calls:
            if not arguments_are_valid(call):
                logger.warning(
                    "model sent tool arguments that are not a JSON object", extra={"tool": call.function.name}
                )
        if calls:
            events.append(ToolCallsComplete(tuple(calls), content, reasoning))
        else:
            events.append(FinalResponse(content, reasoning))
        usage = self._usage
        if usage is None:
            completion = len(content) + len(reasoning or "") + sum(len(c.function.arguments) for c in calls)
            usage = Usage.estimate(prompt_chars, completion)
        events.append(IterationComplete(usage, self._finish_reason))
        return events


class ChatCompletionsStrategy:
    """One model call per iteration on an OpenAI-compatible endpoint."""

    def __init__(
        self,
        *,
        name: str,
        metadata: StrategyMetadata,
        client: ChatClient,
        max_tokens: int,
        extra_body: Mapping[str, Any] | None = None,
        replay_reasoning: bool = False,
        split_think_tags: bool = False,
    ) -> None:
        self.name = name
        self.metadata = metadata
        self._client = client
        self._max_tokens = max_tokens
        self._extra_body = dict(extra_body or {})
        self._replay_reasoning = replay_reasoning
        self._split_think_tags = split_think_tags

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, model={self.metadata.model!r})"

    def build_payload(
        self, messages: list[Message], tools: list[dict[str, Any]], ctx: IterationContext
    ) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.metadata.model,
            "messages": map_messages(messages, replay_reasoning=self._replay_reasoning),
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_tokens": ctx.max_tokens or self._max_tokens,
        }
        if tools and ctx.allow_tools:
            payload["tools"] = map_tools(tools)
        payload.update(self._extra_body)
        return payload

    async def run_iteration(
        self, messages: list[Message], tools: list[dict[str, Any]], ctx: IterationContext
    ) -> AsyncGenerator[StrategyEvent, None]:
        payload = self.build_payload(messages, tools, ctx)
        assembler = IterationAssembler(ctx.streaming_mode, split_think_tags=self._split_think_tags)
        async with aclosing(self._client.stream(payload)) as deltas:
            async for delta in deltas:
                for event in assembler.feed(delta):
                    yield event
        closing = assembler.finish(prompt_chars(payload))
        if assembler.reasoning:
            audit_thinking(
                sanitize_reasoning(
                    assembler.reasoning,
                    tool_names=_tool_names(messages, tools),
                    extra_ids=[ctx.conversation_id, *(call.id for call in assembler.calls)],
                ),
                strategy=self.name,
                iteration=ctx.iteration,
            )
        for event in closing:
            yield event

    async def aclose(self) -> None:
        await self._client.aclose()


def _tool_names(messages: list[Message], tools: list[dict[str, Any]]) -> set[str]:
    """Every tool name the trace may mention: those offered now and those called earlier."""
    names = {tool.get("function", tool).get("name", "") for tool in tools}
    names |= {call.function.name for m in messages for call in m.tool_calls or ()}
    return names
