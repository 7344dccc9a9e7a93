"""What every benchmark reports: figures with median and p95, the machine, package versions, files."""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"


@dataclass
class Figure:
    """One measured quantity: its median and p95 over `runs` repetitions, and the goal it is held to."""

    bench: str
    name: str
    unit: str
    median: float
    p95: float | None = None
    runs: int = 1
    goal: str = ""  # e.g. "< 0.4 ms median"; empty: reported only
    met: bool | None = None
    note: str = ""


@dataclass
class Section:
    """A benchmark's figures plus anything else it found worth keeping (top imports, ratios, …)."""

    bench: str
    figures: list[Figure] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    packages: list[str] = field(default_factory=list)
    error: str | None = None

    def add(self, name: str, unit: str, samples: list[float] | float, **extra: Any) -> Figure:
        values = samples if isinstance(samples, list) else [samples]
        figure = Figure(
            self.bench,
            name,
            unit,
            median=statistics.median(values),
            p95=percentile(values, 95) if len(values) > 1 else None,
            runs=len(values),
            **extra,
        )
        self.figures.append(figure)
        return figure


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile, interpolated between closest ranks (numpy's default)."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def machine() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
    }


def versions(names: list[str], paths: list[Path] | None = None) -> dict[str, str]:
    """Installed versions, of this interpreter's packages or of those under `paths`."""
    found = {}
    for name in sorted(set(names)):
        dists = list(metadata.distributions(name=name, path=[str(p) for p in paths])) if paths else []
        try:
            found[name] = (
                dists[0].version if dists else metadata.version(name) if not paths else "not installed"
            )
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def _number(value: float | None) -> str:
    if value is None:
        return "–"
    if value == int(value) and abs(value) >= 1:
        return f"{int(value)}"
    return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"


def table(sections: list[Section]) -> str:
    lines = [
        "| benchmark | measure | median | p95 | unit | runs | goal | |",
        "|---|---|---:|---:|---|---:|---|---|",
    ]
    for section in sections:
        if section.error:
            lines.append(f"| {section.bench} | **failed**: {section.error} | | | | | | |")
        for f in section.figures:
            status = "" if f.met is None else ("met" if f.met else "**missed**")
            name = f"{f.name} ({f.note})" if f.note else f.name
            row = [f.bench, name, _number(f.median), _number(f.p95), f.unit, str(f.runs), f.goal, status]
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def write(sections: list[Section], options: dict[str, Any]) -> tuple[Path, Path]:
    """bench/results/latest.json and latest.md; returns their paths."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    packages = versions([p for s in sections for p in s.packages])
    info = machine()
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    report = {
        "when": stamp,
        "machine": info,
        "options": options,
        "packages": packages,
        "sections": [asdict(s) for s in sections],
    }
    json_path = RESULTS / "latest.json"
    json_path.write_text(json.dumps(report, indent=1, default=str))
    md = [
        f"# make bench — {stamp}",
        "",
        f"Machine: {info['cpu']}, {info['cores']} cores, {info['implementation']} {info['python']}, "
        f"{info['platform']}",
        "",
        "Packages: " + ", ".join(f"{k} {v}" for k, v in packages.items()),
        "",
        table(sections),
        "",
    ]
    for section in sections:
        for key, value in section.details.items():
            md += [f"### {section.bench}: {key}", "", detail(value), ""]
    md_path = RESULTS / "latest.md"
    md_path.write_text("\n".join(md))
    return json_path, md_path


def detail(value: Any) -> str:
    """A detail as markdown: a list of records as a table, a dict as a list, anything else as text."""
    if isinstance(value, list) and value and isinstance(value[0], dict):
        keys = list(value[0])
        rows = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
        rows += ["| " + " | ".join(str(item.get(k, "")) for k in keys) + " |" for item in value]
        return "\n".join(rows)
    if isinstance(value, dict):
        return "\n".join(f"- {k}: {v}" for k, v in value.items())
    return str(value)


def fresh_output(script: str, *args: str, env: dict[str, str], what: str) -> list[str]:
    """The words a fresh interpreter prints running `script` with `args` (from the repository's root);
    RuntimeError with the end of its stderr when it fails, naming `what` it was doing."""
    proc = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{what} failed\n{proc.stderr[-2000:]}")
    return proc.stdout.split()
