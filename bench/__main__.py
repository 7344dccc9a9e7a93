"""`python -m bench [--only loop,cold] [--quick]`: run the benchmarks, print the table, write bench/results/."""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import importlib
import io
import os
import sys
import time
import traceback

from bench.report import ROOT, Section, detail, machine, table, versions, write

sys.path.insert(0, str(ROOT / "layers" / "core"))
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# name -> module with run(quick) -> Section, in the order they run
BENCHMARKS = {
    "loop": "bench.loop",
    "tracing": "bench.tracing",
    "cold": "bench.cold",
    "ttft": "bench.ttft",
    "memory": "bench.memory",
    "titles": "bench.titles",
    "streaming": "bench.streaming",
    "critical_path": "bench.critical_path",
    "dynamodb": "bench.dynamodb",
    "approvals": "bench.approvals",
    "turns": "bench.turns",
    "cost": "bench.cost",
    "selection": "bench.selection",
    "assertion": "bench.assertion",
    "history": "bench.history",
    "concurrency": "bench.concurrency",
    "archival": "bench.archival",
    "erasure": "bench.erasure",
    "answers": "bench.answers",
    "mcp": "bench.mcp",
    "attachments": "bench.attachments",
    "memory_use": "bench.memory_use",
    "size": "bench.size",
    "embedders": "bench.embedders",
    "remote_embedders": "bench.remote_embedders",
    "catalogue": "bench.catalogue",
    "retrieval": "bench.retrieval",
    "bill": "bench.bill",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--only", default="", help=f"comma-separated subset of: {', '.join(BENCHMARKS)}")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke run, not figures)")
    args = parser.parse_args(argv)
    chosen = [name.strip() for name in args.only.split(",") if name.strip()] or list(BENCHMARKS)
    unknown = [name for name in chosen if name not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}")

    info = machine()
    print(
        f"machine: {info['cpu']}, {info['cores']} cores, {info['implementation']} {info['python']}, {info['platform']}"
    )
    print(f"load average at start: {os.getloadavg()[0]:.2f}", flush=True)
    from bench.stack import started as stack_started
    from bench.stack import stop_shared

    lock = _one_run_per_checkout()
    sections: list[Section] = []
    moto_peak: float | None = None
    try:
        for name in chosen:
            print(f"\n== {name} ...", flush=True)
            started = time.monotonic()
            section = _run_one(name, args.quick)
            sections.append(section)
            print(table([section]), flush=True)
            if section.packages:
                print("versions: " + ", ".join(f"{k} {v}" for k, v in versions(section.packages).items()))
            for key, value in section.details.items():
                if key.startswith("versions") and isinstance(value, dict):
                    print(f"{key}: " + ", ".join(f"{k} {v}" for k, v in value.items()))
                if key.startswith("table:"):  # a section's own summary, printed whole
                    print(f"\n{key[6:].strip()}:\n{detail(value)}")
            if (stack := stack_started()) is not None:
                moto_peak = stack.moto_peak_mib()
                print(f"moto server: peak RSS so far {moto_peak:.0f} MiB")
            print(f"({time.monotonic() - started:.0f} s)", flush=True)
    finally:
        stop_shared()
        lock.close()

    options: dict[str, object] = {
        "only": chosen,
        "quick": args.quick,
        "load_average_end": round(os.getloadavg()[0], 2),
        "moto_peak_rss_mib": round(moto_peak) if moto_peak is not None else None,
    }
    json_path, md_path = write(sections, options)
    print("\n" + table(sections))
    print(f"\nload average at the end: {options['load_average_end']:.2f}")
    if moto_peak is not None:
        print(f"moto server (the bench stack's DynamoDB, S3 and SSM): peak RSS {moto_peak:.0f} MiB")
    print(f"\nwritten: {json_path.relative_to(ROOT)}, {md_path.relative_to(ROOT)}")
    return 1 if any(s.error for s in sections) else 0


def _one_run_per_checkout() -> io.TextIOWrapper:
    """Hold this checkout's bench lock: a second run here would wipe the first one's Chroma data and
    rebuild the Lambda layout under its processes (both live under .local/bench)."""
    path = ROOT / ".local" / "bench" / "run.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = path.open("a+")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.seek(0)
        sys.exit(f"another `python -m bench` is running in this checkout (pid {lock.read().strip() or '?'})")
    lock.truncate(0)
    lock.write(str(os.getpid()))
    lock.flush()
    return lock


def _run_one(name: str, quick: bool) -> Section:
    """One benchmark, on an empty store; its stdout (the service's metric and log lines) is kept out
    of the report. A store that cannot be emptied fails this benchmark, not the run."""
    from bench.stack import started as stack_started

    captured = io.StringIO()
    try:
        if (stack := stack_started()) is not None:
            stack.fresh_table()
        module = importlib.import_module(BENCHMARKS[name])
        with contextlib.redirect_stdout(captured):
            return module.run(quick=quick)
    except Exception as exc:
        traceback.print_exc()
        return Section(name, error=f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")


if __name__ == "__main__":
    sys.exit(main())
