"""The answer prompt (docs/answers.md): a `string.Template` filled with numbered, sanitised passages.

The template comes from `RAG_PROMPT_TEMPLATE_PATH`, else the packaged `prompts/rag_answer.txt`; the
composition root reads it once and checks it at start-up (`load_template`). It becomes the system message; the question
is the user message. Placeholders:

    $context          the passages (required), one block each:
                      <passage number="1" citation="[source:doc-7#2]" title="…" source="…" tags="a, b">
                      text
                      </passage>
    $citation_format  [source:documentId#chunkIndex]
    $passage_count    how many passages there are

The blocks are written by `domain.passage_formats.render_context` (text truncated to
`RAG_CONTEXT_MAX_CHARS`), which also reads them back for the offline extractive strategy.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from string import Template

from rag_orchestrator.domain.messages import Message, Role
from rag_orchestrator.domain.passage_formats import render_context
from rag_orchestrator.domain.passages import CITATION_FORMAT, Passage
from rag_orchestrator.errors import ConfigError

DEFAULT_TEMPLATE = Path(__file__).with_name("prompts") / "rag_answer.txt"
FIELDS = ("context", "citation_format", "passage_count")
MAX_TEMPLATE_CHARS = 50_000
VARIABLE = "RAG_PROMPT_TEMPLATE_PATH"


@dataclass(frozen=True, slots=True)
class AnswerPrompt:
    messages: list[Message]  # system (the filled template), then user (the question)
    system: str


def load_template(path: str | None = None) -> Template:
    """The template at `path` (None: the packaged default), checked; a ConfigError naming the variable."""
    origin = path or f"the packaged default ({DEFAULT_TEMPLATE.name})"
    try:
        text = Path(path).read_text(encoding="utf-8") if path else DEFAULT_TEMPLATE.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise ConfigError(f"{VARIABLE}: cannot read {origin}: {reason}") from None
    return parse_template(text, origin)


def parse_template(text: str, origin: str = "the template") -> Template:
    if len(text) > MAX_TEMPLATE_CHARS:
        raise ConfigError(f"{VARIABLE}: {origin} is longer than {MAX_TEMPLATE_CHARS} characters")
    template = Template(text)
    if not template.is_valid():
        raise ConfigError(f"{VARIABLE}: {origin} has a malformed placeholder (write $$ for a literal $)")
    used = set(template.get_identifiers())
    unknown = sorted(used - set(FIELDS))
    if unknown:
        raise ConfigError(
            f"{VARIABLE}: {origin} uses unknown placeholders {', '.join(unknown)}; known: {', '.join(FIELDS)}"
        )
    if "context" not in used:
        raise ConfigError(f"{VARIABLE}: {origin} must contain $context, where the passages go")
    return template


def build_prompt(question: str, passages: list[Passage], template: Template, max_chars: int) -> AnswerPrompt:
    """The template filled with the passages (each text at most `max_chars`), and the question."""
    system = template.substitute(
        context=render_context(passages, max_chars),
        citation_format=CITATION_FORMAT,
        passage_count=len(passages),
    )
    messages = [Message(role=Role.SYSTEM, content=system), Message(role=Role.USER, content=question)]
    return AnswerPrompt(messages=messages, system=system)
