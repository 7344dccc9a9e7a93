"""The docs keep up with the code: every route of the app is in docs/api.md with the statuses the OpenAPI
document declares, every variable config.py reads is in docs/configuration.md, every event of every
stream is in docs/streams.md (the AI SDK's parts in docs/ui-stream.md), and nothing in the repository
points to a document outside it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any, get_args

import pytest

from rag_orchestrator.api.app import ALL_ROUTERS, create_app
from rag_orchestrator.config import Settings
from rag_orchestrator.domain.events import StreamEvent

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
CORE = ROOT / "layers" / "core" / "rag_orchestrator"
ROW = re.compile(r"^\| `(GET|POST|PUT|PATCH|DELETE) (/[^`]*)` \|.*\| ([\d ]+) \|$", re.MULTILINE)
PATH_PARAMETER = re.compile(r"\{[^}]+\}")


def read(name: str) -> str:
    return (DOCS / name).read_text()


def backticked(text: str) -> set[str]:
    return set(re.findall(r"`([^`\n]+)`", text))


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return create_app(ALL_ROUTERS).openapi()


def route(method: str, path: str) -> str:
    """`POST /a/{conversation_id}/b` and `POST /a/{conversationId}/b` are the same route."""
    return f"{method.upper()} {PATH_PARAMETER.sub('{}', path)}"


def test_every_route_is_in_the_api_doc_with_the_statuses_the_openapi_document_declares(document):
    declared = {
        route(method, path): {int(status) for status in operation["responses"]}
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
    }
    documented = {
        route(method, path): {int(status) for status in statuses.split()}
        for method, path, statuses in ROW.findall(read("api.md"))
    }
    assert sorted(set(declared) - set(documented)) == [], "routes missing from docs/api.md"
    assert sorted(set(documented) - set(declared)) == [], "docs/api.md lists routes the app does not have"
    wrong = {
        name: (documented[name], statuses)
        for name, statuses in declared.items()
        if documented[name] != statuses
    }
    assert wrong == {}, "docs/api.md (left) and the OpenAPI document (right) disagree"


def test_every_status_the_api_answers_is_explained(document):
    statuses = {int(s) for ops in document["paths"].values() for op in ops.values() for s in op["responses"]}
    explained = {int(s) for s in re.findall(r"^\| (\d{3}) \|", read("errors.md"), re.MULTILINE)}
    assert sorted(s for s in statuses if s >= 400 and s not in explained) == []


def variables_read_by_config() -> set[str]:
    named = {name.upper() for name in Settings.model_fields}
    for module in (CORE / "config.py", CORE / "observability.py"):
        named |= set(re.findall(r"os\.environ(?:\.get\(|\[)\"([A-Z0-9_]+)\"", module.read_text()))
    return named


def test_every_variable_config_reads_is_in_the_configuration_doc():
    documented = {
        word for cell in backticked(read("configuration.md")) for word in re.findall(r"[A-Z0-9_]+", cell)
    }
    missing = sorted(variables_read_by_config() - documented)
    assert missing == [], "variables missing from docs/configuration.md"
    assert "<NAME>_PARAM" in read("configuration.md")  # secrets by SSM parameter name, read as f-strings


def test_every_event_and_field_of_the_native_stream_is_in_the_streams_doc():
    text = read("streams.md")
    words = backticked(text) | {w for cell in backticked(text) for w in re.split(r"[^A-Za-z?]+", cell)}
    for model in get_args(get_args(StreamEvent)[0]):
        name = model.model_fields["type"].default
        assert name in words, name
        for field, info in model.model_fields.items():
            alias = info.alias or field
            assert alias in words or f"{alias}?" in words, f"{name}.{alias}"


def test_every_event_of_the_answer_stream_and_part_of_the_ui_stream_is_documented(document):
    schemas = document["components"]["schemas"]
    answer_events = {m["properties"]["event"]["const"] for m in schemas["AnswerStreamMessage"]["oneOf"]}
    assert sorted(answer_events - backticked(read("streams.md"))) == []
    ui = schemas["UIMessageStreamMessage"]["properties"]["data"]["else"]["contentSchema"]["oneOf"]
    parts = {part["properties"]["type"]["const"] for part in ui}
    assert sorted(parts - backticked(read("ui-stream.md"))) == []


def test_the_docs_index_links_every_doc_and_the_readme_links_the_index():
    index = read("README.md")
    pages = {path.name for path in DOCS.glob("*.md")} - {"README.md"}
    assert sorted(page for page in pages if f"]({page})" not in index) == []
    assert "](docs/README.md)" in (ROOT / "README.md").read_text()


def test_nothing_in_the_repository_points_to_a_document_outside_it():
    # Spelled in pieces, so this file is not itself a match.
    outside = ["DES" + "IGN", "../" + "shared"]
    found = subprocess.run(
        ["git", "grep", "-n", "-I", "-F", "-e", outside[0], "-e", outside[1], "--", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert found.returncode == 1, found.stdout  # 1: no line matches
