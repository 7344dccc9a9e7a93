"""The bill's configurations and arithmetic (bench/bill.py): what each row compares, and its verdict."""

from __future__ import annotations

from pathlib import Path

import yaml

from bench.bill import LINES, OFF, bill, configurations
from bench.report import Section
from rag_orchestrator.config import load_settings

DEFAULT_ON = ("hybrid", "reranked", "memory")


def modes(tmp_path: Path) -> dict[str, tuple[str, dict[str, str]]]:
    return configurations(tmp_path, "http://127.0.0.1:9", "http://127.0.0.1:10/mcp", "http://127.0.0.1:11")


def test_every_row_compares_two_configurations_the_bench_runs_with_turns_of_one_kind(tmp_path):
    configured = modes(tmp_path)
    for line in LINES:
        assert line.on in configured and line.off in configured, line
        # the same turn on both sides (a tool turn calls the tool over HTTP, or over MCP)
        kinds = {configured[line.on][0], configured[line.off][0]}
        assert kinds <= {"tool", "mcp"} or len(kinds) == 1, line


def test_the_defaults_row_runs_a_deployments_defaults_and_everything_off_turns_each_of_them_off(tmp_path):
    configured = modes(tmp_path)
    assert configured["defaults"][1] == {}
    defaults = load_settings(conversation_storage="memory")
    off = load_settings(conversation_storage="memory", **{k.lower(): v for k, v in OFF.items()})
    assert (defaults.memory_enabled, defaults.retrieval_mode, defaults.reranker) == (True, "hybrid", "local")
    assert (off.memory_enabled, off.retrieval_mode, off.reranker) == (False, "dense", "none")
    assert defaults.otel_exporter_otlp_endpoint is None and defaults.mcp_servers is None


def test_the_default_on_features_share_the_defaults_budget():
    budgets = {line.on: line for line in LINES}
    assert sum(budgets[mode].first_ms for mode in DEFAULT_ON) == budgets["defaults"].first_ms == 5.0
    assert sum(budgets[mode].cpu_ms for mode in DEFAULT_ON) == budgets["defaults"].cpu_ms


def test_the_two_tool_catalogues_differ_only_in_the_identity_they_send(tmp_path):
    configured = modes(tmp_path)
    none, signed = (
        yaml.safe_load(Path(configured[mode][1]["TOOL_CATALOG_PATH"]).read_text())["tools"][0]
        for mode in ("tool", "assertion")
    )
    assert none["http"].pop("identity") == "none" and signed["http"].pop("identity") == "assertion"
    assert none == signed
    assert "ASSERTION_PRIVATE_KEY_PARAM" in configured["assertion"][1]


def test_a_row_is_met_only_when_both_the_first_token_and_the_cpu_are_within_budget():
    runs = 3
    samples = {
        mode: {"first": [100.0 + shift] * runs, "added": [1.0] * runs, "after": [1.0] * runs}
        for mode, shift in {
            "off": 0.0,
            "tool": 0.0,
            "no compaction": 0.0,
            "hybrid": 1.0,  # within its 2 ms
            "reranked": 4.0,  # 3 ms over hybrid: over its 1.5 ms
            "memory": 1.0,
            "assertion": 0.5,
            "mcp": 2.0,
            "compaction": 0.0,
            "tracing": 0.0,
            "defaults": 4.0,
        }.items()
    }
    cpu = {mode: 40.0 for mode in samples} | {"memory": 45.0}  # memory: 5 ms over its 1.5 ms
    section = Section("bill")
    bill(section, samples, cpu.__getitem__, runs)
    verdicts = {row["feature"]: row[""] for row in section.details["table: the bill, warm, per turn"]}
    assert verdicts["hybrid search (BM25 beside dense, fused)"] == "met"
    assert verdicts["local reranker (20 candidates)"] == "**missed**"
    assert verdicts["memory recall (+ indexing after the turn)"] == "**missed**"
    assert verdicts["defaults on, in all"] == "met"
    goals = [f for f in section.figures if f.goal]
    assert len(goals) == 2 * len(LINES) and all(f.met is not None for f in goals)
