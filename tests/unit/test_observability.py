"""Log levels as a deployment sets them: TRACE (by name or as 5) shows the reasoning audit lines."""

import logging
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from rag_orchestrator.observability import redacted

CORE = Path(__file__).resolve().parents[2] / "layers" / "core"
SCRIPT = "from rag_orchestrator.observability import audit_thinking\naudit_thinking('sanitized thought')\n"


def audit_lines(**env: str) -> list[str]:
    environ = {k: v for k, v in os.environ.items() if "LOG_LEVEL" not in k} | env | {"PYTHONPATH": str(CORE)}
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=environ, capture_output=True, text=True, check=True
    )
    return [line for line in out.stdout.splitlines() if "[thinking][audit]" in line]


@pytest.mark.parametrize(
    ("env", "shown"),
    [
        ({"LOG_LEVEL": "TRACE"}, True),
        ({"LOG_LEVEL": "5"}, True),
        ({"POWERTOOLS_LOG_LEVEL": "TRACE"}, True),
        ({"LOG_LEVEL": "DEBUG"}, False),
        ({}, False),
    ],
)
def test_trace_shows_the_reasoning_audit_and_nothing_above_it_does(env, shown):
    lines = audit_lines(**env)
    assert bool(lines) is shown
    assert all('"level":"TRACE"' in line for line in lines)


def test_upstream_text_is_logged_on_one_line_without_keys_and_truncated():
    text = "bad key sk-abcdef123456 and\nAuthorization: Bearer eyJhbGciOi.xyz and my-own-secret " + "x" * 500
    logged = redacted(text, "my-own-secret")
    assert "sk-abcdef123456" not in logged and "eyJhbGciOi" not in logged and "my-own-secret" not in logged
    assert "\n" not in logged and len(logged) == 300 and logged.count("[redacted]") == 3


@pytest.fixture
def enabled_metrics(monkeypatch):
    from rag_orchestrator.observability import metrics

    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    metrics.clear_metrics()
    yield metrics
    metrics.clear_metrics()


def emf_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith('{"_aws"')]


def test_a_handler_that_adds_no_metrics_publishes_nothing_and_warns_of_nothing(enabled_metrics, capsys):
    import warnings

    from rag_orchestrator.observability import publishes_metrics

    @publishes_metrics
    def handler(event: dict, context: object) -> dict:
        return {"skipped": event["keys"]}

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Powertools' log_metrics warns "No application metrics to publish"
        assert handler({"keys": ["a"]}, None) == {"skipped": ["a"]}
    assert emf_lines(capsys.readouterr().out) == []


def test_a_handlers_metrics_are_published_once_even_when_it_fails(enabled_metrics, capsys):
    from rag_orchestrator.observability import publishes_metrics

    @publishes_metrics
    def handler(event: dict, context: object) -> dict:
        enabled_metrics.add_metric(name="DocumentsFailed", unit="Count", value=1)
        raise RuntimeError("an object cannot be read now")

    with pytest.raises(RuntimeError):
        handler({}, None)
    (line,) = emf_lines(capsys.readouterr().out)
    assert '"DocumentsFailed":[1.0]' in line or '"DocumentsFailed":1.0' in line
    assert enabled_metrics.metric_set == {}


@pytest.mark.parametrize(
    ("message", "args"),
    [
        ("turn usage", ()),
        ("tool failed", ()),
        ('{"x": [1, 2]}', ()),
        ("  [1, 2] ", ()),
        ("true", ()),
        ("tru", ()),
        (" -5", ()),
        ("NaN", ()),
        ("Infinity", ()),
        ('"quoted"', ()),
        ("", ()),
        ("a %s b", ("x",)),
        ({"a": 1}, ()),
    ],
)
def test_the_log_formatter_writes_what_powertools_would(message, args):
    from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter

    from rag_orchestrator.observability import logger

    ours = logger.registered_formatter
    theirs = LambdaPowertoolsFormatter(service=logger.service, sampling_rate=logger.sampling_rate)
    theirs.log_format = dict(ours.log_format)
    record = logging.LogRecord("x", logging.INFO, "f.py", 7, message, args, None, "f")
    record.caller_id, record.tokens = "alice", 3
    record.when, record.label = datetime(2026, 11, 27, tzinfo=UTC), "café ✓ \u2028"  # str() and not ASCII
    assert type(ours) is not LambdaPowertoolsFormatter
    assert ours.format(record) == theirs.format(record)
    assert ours.keys_combined == theirs.keys_combined  # what clear_state goes back to


def test_the_log_formatter_places_appended_keys_as_powertools_does():
    """Keys appended to the format and to the context, reserved ones %-formatted from the record,
    and the record's extras after them, in Powertools' order; a reserved key given a non-string fails
    alike."""
    from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter, clear_context_keys

    from rag_orchestrator.observability import _Formatter

    ours, theirs = _Formatter(service="s"), LambdaPowertoolsFormatter(service="s")
    try:
        for formatter in (ours, theirs):
            formatter.append_keys(order="o-1", module="%(module)s!", level=None)
        ours.thread_safe_append_keys(request="r-1", process="%(process)d", lineno="", caller_id="shadowed")
        record = logging.LogRecord("x", logging.WARNING, "/a/f.py", 7, "m", (), None, "f")
        record.caller_id, record.thread, record.extra_none = "alice", 5, None
        assert ours.format(record) == theirs.format(record)
        assert '"module":"f!"' in ours.format(record) and '"caller_id":"alice"' in ours.format(record)
        ours.thread_safe_append_keys(process=7)
        for formatter in (ours, theirs):
            with pytest.raises(ValueError, match="need to be type 'str', instead got 'int'"):
                formatter.format(record)
    finally:
        clear_context_keys()


@pytest.mark.filterwarnings("ignore:POWERTOOLS_DEV environment variable is enabled")
def test_the_log_formatter_indents_as_powertools_does_under_sam_local(monkeypatch):
    from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter

    from rag_orchestrator.observability import _Formatter

    monkeypatch.setenv("POWERTOOLS_DEV", "true")  # what `sam local` sets: pretty-printed lines
    ours, theirs = _Formatter(service="s"), LambdaPowertoolsFormatter(service="s")
    record = logging.LogRecord("x", logging.INFO, "f.py", 7, "turn usage", (), None, "f")
    record.caller_id, record.when = "alice", datetime(2026, 11, 27, tzinfo=UTC)
    assert "\n" in ours.format(record)
    assert ours.format(record) == theirs.format(record)


@pytest.mark.parametrize("utc", [False, True])
def test_the_log_formatter_writes_each_timestamp_as_powertools_does(utc, monkeypatch):
    import random
    import time

    from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter

    from rag_orchestrator.observability import _Formatter

    monkeypatch.setenv("TZ", "America/St_Johns")  # a half-hour offset, with summer time
    time.tzset()
    try:
        ours, theirs = _Formatter(service="s", utc=utc), LambdaPowertoolsFormatter(service="s", utc=utc)
        rng = random.Random(5)
        change = 1_772_947_800.0  # 2026-03-08 02:00 there: summer time begins (-0330 to -0230)
        moments = [change + rng.uniform(-7_200, 7_200) for _ in range(300)]
        moments += [change - 0.001, change, change + 0.0004, 1_700_000_000.9996]
        for created in sorted(moments) + moments:  # in order, and again out of order
            record = logging.LogRecord("x", logging.INFO, "f.py", 7, "m", (), None, "f")
            record.created, record.msecs = created, (created - int(created)) * 1000
            assert ours.formatTime(record) == theirs.formatTime(record), created
    finally:
        monkeypatch.undo()
        time.tzset()
