"""The OpenAI chat-completions wire format, as pure functions: messages and tools out, deltas in."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rag_orchestrator.domain.messages import FunctionCall, Message, Role, ToolCall
from rag_orchestrator.providers.events import Usage


@dataclass(frozen=True, slots=True)
class ToolCallFragment:
    """One streamed piece of a tool call; id and name may come only on the first piece."""

    index: int | None
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclass(slots=True)
class ChunkDelta:
    """What one `chat.completion.chunk` carries for the first choice (not frozen: one is made per
    streamed token, and a frozen dataclass's constructor costs three times as much)."""

    content: str = ""
    reasoning: str = ""
    tool_calls: tuple[ToolCallFragment, ...] = ()
    finish_reason: str | None = None
    usage: Usage | None = None

    @property
    def has_output(self) -> bool:
        return bool(self.content or self.reasoning or self.tool_calls)


def map_messages(messages: Iterable[Message], *, replay_reasoning: bool = False) -> list[dict[str, Any]]:
    """Our messages as wire messages.

    `replay_reasoning` (DeepSeek thinking mode): every assistant message of a user turn in which the
    model called tools carries its `reasoning_content` ("" when none was kept), as the API requires;
    assistant messages of turns without tool calls carry none, where it would only be ignored.
    """
    messages = list(messages)
    replay_turns = _turns_with_tool_calls(messages) if replay_reasoning else set()
    wire: list[dict[str, Any]] = []
    turn = 0
    for message in messages:
        if message.role is Role.USER:
            turn += 1
        if message.role is Role.TOOL:
            wire.append(
                {"role": "tool", "tool_call_id": message.tool_call_id or "", "content": message.content}
            )
            continue
        item: dict[str, Any] = {"role": message.role.value, "content": message.content}
        if message.role is Role.ASSISTANT:
            if message.tool_calls:
                item["tool_calls"] = [map_tool_call(call) for call in message.tool_calls]
            if turn in replay_turns:
                item["reasoning_content"] = message.reasoning or ""
        wire.append(item)
    return wire


def _turns_with_tool_calls(messages: list[Message]) -> set[int]:
    turns, turn = set(), 0
    for message in messages:
        if message.role is Role.USER:
            turn += 1
        elif message.role is Role.ASSISTANT and message.tool_calls:
            turns.add(turn)
    return turns


def map_tool_call(call: ToolCall) -> dict[str, Any]:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.function.name, "arguments": call.function.arguments},
    }


def map_tools(tools: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI function definitions; a bare `{name, description, parameters}` is wrapped."""
    mapped = []
    for tool in tools:
        if tool.get("type") == "function" and "function" in tool:
            mapped.append(dict(tool))
        else:
            mapped.append({"type": "function", "function": dict(tool)})
    return mapped


def parse_usage(value: Any) -> Usage | None:
    if not isinstance(value, Mapping):
        return None
    prompt, completion = value.get("prompt_tokens"), value.get("completion_tokens")
    if not isinstance(prompt, int) or not isinstance(completion, int):
        return None
    total = value.get("total_tokens")
    return Usage(prompt, completion, total if isinstance(total, int) else prompt + completion)


def parse_chunk(data: Mapping[str, Any]) -> ChunkDelta:
    """One decoded `data:` object of the stream (an in-band error is handled by the caller)."""
    # Called once per streamed token: plain dicts (what JSON decodes to) skip the Mapping ABC checks.
    usage = data.get("usage")
    usage = parse_usage(usage) if usage is not None else None
    choices = data.get("choices")
    choice = choices[0] if choices else None
    if type(choice) is not dict and not isinstance(choice, Mapping):
        return ChunkDelta("", "", (), None, usage)  # the usage chunk has `choices: []`
    delta = choice.get("delta") or choice.get("message") or _EMPTY
    content = delta.get("content")
    reasoning = delta.get("reasoning_content")
    if not isinstance(reasoning, str):
        reasoning = delta.get("reasoning")  # vLLM and Ollama name it `reasoning`
    calls = delta.get("tool_calls")
    fragments = tuple(_fragment(raw) for raw in calls if isinstance(raw, Mapping)) if calls else ()
    return ChunkDelta(
        content if isinstance(content, str) else "",
        reasoning if isinstance(reasoning, str) else "",
        fragments,
        choice.get("finish_reason") or None,
        usage,
    )


def _fragment(raw: Mapping[str, Any]) -> ToolCallFragment:
    function = raw.get("function") or {}
    arguments = function.get("arguments")
    if isinstance(arguments, Mapping):  # a few servers send an object, not JSON text
        arguments = json.dumps(arguments, ensure_ascii=False)
    index = raw.get("index")
    return ToolCallFragment(
        index=index if isinstance(index, int) else None,
        id=raw.get("id") or None,
        name=function.get("name") or None,
        arguments=_text(arguments),
    )


_EMPTY: Mapping[str, Any] = {}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


@dataclass(slots=True)
class _PartialCall:
    id: str | None = None
    name: str | None = None
    arguments: list[str] = field(default_factory=list)


class ToolCallAccumulator:
    """Joins streamed tool-call fragments by `index`; arguments are checked only when complete."""

    def __init__(self) -> None:
        self._calls: dict[int, _PartialCall] = {}
        self._last: int | None = None

    def __bool__(self) -> bool:
        return bool(self._calls)

    def add(self, fragment: ToolCallFragment) -> None:
        index = fragment.index
        if index is None:  # servers that omit the index: a new id opens a call, else continue the last
            known = next((i for i, c in self._calls.items() if fragment.id and c.id == fragment.id), None)
            if known is not None:
                index = known
            elif fragment.id or self._last is None:
                index = len(self._calls)
            else:
                index = self._last
        call = self._calls.setdefault(index, _PartialCall())
        call.id = call.id or fragment.id
        call.name = call.name or fragment.name
        if fragment.arguments:
            call.arguments.append(fragment.arguments)
        self._last = index

    def complete(self) -> list[ToolCall]:
        """The calls in index order. Arguments that are not valid JSON are kept as text: the loop
        sends them back to the model as an unsuccessful tool result."""
        calls = []
        for index in sorted(self._calls):
            partial = self._calls[index]
            arguments = "".join(partial.arguments).strip() or "{}"
            calls.append(
                ToolCall(
                    id=partial.id or f"call_{uuid.uuid4().hex[:24]}",
                    function=FunctionCall(name=partial.name or "", arguments=arguments),
                )
            )
        return calls


def arguments_are_valid(call: ToolCall) -> bool:
    try:
        return isinstance(json.loads(call.function.arguments), dict)
    except ValueError:
        return False


def prompt_chars(payload: Mapping[str, Any]) -> int:
    """Characters a request sends to the model, for usage estimates."""
    chars = sum(
        len(m.get("content") or "") + len(m.get("reasoning_content") or "") for m in payload["messages"]
    )
    chars += sum(len(json.dumps(m["tool_calls"])) for m in payload["messages"] if m.get("tool_calls"))
    return chars + (len(json.dumps(payload["tools"])) if payload.get("tools") else 0)
