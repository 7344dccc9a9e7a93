"""A Lambda-like file layout on this machine, for the cold-start benchmarks.

Lambda puts the function's code first on sys.path, then the layer (/opt/python), then the
runtime's own boto3 & co; nothing else is installed. Measuring cold starts in the dev venv would
blame the wrong things (it holds rich, click, the full chromadb…), so this builds the same layout
under .local/bench/lambda with the host's wheels:

    as-built/site/        layers/core/requirements.txt + functions/*/requirements.txt
    as-built/opt/python/  a fresh copy of the rag_orchestrator sources
    as-built/functions/   a fresh copy of each function's code
    runtime/              what the python3.12 runtime provides (boto3, …) at dev.lock's versions

`sam build` ships no .pyc (neither for the layer's packages nor for our sources) and /opt and
/var/task are read-only, so a real cold start compiles every module it imports: as-built/ has no
.pyc either, and processes run with PYTHONDONTWRITEBYTECODE=1 and `python -S` (no site-packages).
compiled/ is the same with bytecode shipped (compileall, unchecked-hash), to measure what that
would save. runtime/ is byte-compiled, as the runtime's own packages are.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from bench.report import ROOT
from devserver.lambda_env import lambda_environment

BASE = ROOT / ".local" / "bench" / "lambda"
RUNTIME_PACKAGES = ("boto3", "botocore", "s3transfer", "jmespath", "python-dateutil", "urllib3", "six")
UV = ROOT / ".venv" / "bin" / "uv"


def functions() -> list[str]:
    """Every function that has an app module: new functions are picked up without a change here."""
    return sorted(p.parent.name for p in (ROOT / "functions").glob("*/app.py"))


def _requirements() -> list[Path]:
    return [ROOT / "layers" / "core" / "requirements.txt", *sorted(ROOT.glob("functions/*/requirements.txt"))]


def _runtime_pins() -> list[str]:
    wanted = {name.replace("-", "_") for name in RUNTIME_PACKAGES}
    pins = []
    for line in (ROOT / "requirements" / "dev.lock").read_text().splitlines():
        name = line.split("==")[0].strip().lower().replace("-", "_")
        if "==" in line and name in wanted:
            pins.append(line.split(";")[0].strip())
    return pins


def _install(target: Path, args: list[str], stamp_text: str, *, compile_bytecode: bool = False) -> None:
    stamp = target / ".stamp"
    wanted = hashlib.sha256(stamp_text.encode()).hexdigest()
    if stamp.exists() and stamp.read_text() == wanted:
        return
    shutil.rmtree(target, ignore_errors=True)
    command = [str(UV), "pip", "install", "--quiet", "--target", str(target), "--python", sys.executable]
    command += [*args, "--compile-bytecode"] if compile_bytecode else args
    subprocess.run(command, check=True, cwd=ROOT)
    stamp.write_text(wanted)


def _copy_sources(source: Path, target: Path) -> None:
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


@dataclass(frozen=True)
class Layout:
    root: Path  # as-built/ or compiled/
    runtime: Path

    @property
    def site(self) -> Path:
        return self.root / "site"

    @property
    def opt(self) -> Path:
        return self.root / "opt" / "python"

    @property
    def functions(self) -> Path:
        return self.root / "functions"

    def function_dir(self, name: str) -> Path:
        return self.functions / name

    def pythonpath(self, function: str) -> str:
        return os.pathsep.join(
            str(p) for p in (self.function_dir(function), self.opt, self.site, self.runtime)
        )

    def env(self, function: str, **extra: str) -> dict[str, str]:
        """The environment of a deployed function (template.yaml's Globals, Lambda's own variables)."""
        task_root = str(self.function_dir(function))
        env = lambda_environment(task_root, function, stage="bench")
        env.update(PYTHONPATH=self.pythonpath(function), PYTHONDONTWRITEBYTECODE="1")
        env.update(extra)
        return env


def prepare(*, compiled: bool = False) -> Layout:
    """Install (when requirements changed) and copy (always) the layout; returns where it is."""
    requirements = _requirements()
    built = BASE / "as-built"
    args = [arg for path in requirements for arg in ("-r", str(path))]
    _install(built / "site", args, "".join(p.read_text() for p in requirements) + sys.version)
    pins = _runtime_pins()
    runtime = BASE / "runtime"
    _install(runtime, pins, "\n".join(pins) + sys.version, compile_bytecode=True)
    layout = Layout(root=built, runtime=runtime)
    _copy_sources(ROOT / "layers" / "core" / "rag_orchestrator", layout.opt / "rag_orchestrator")
    for name in functions():
        _copy_sources(ROOT / "functions" / name, layout.function_dir(name))
    if not compiled:
        return layout
    target = Layout(root=BASE / "compiled", runtime=runtime)
    shutil.rmtree(target.root, ignore_errors=True)
    shutil.copytree(built, target.root, ignore=shutil.ignore_patterns(".stamp"))
    compileall = [
        sys.executable,
        "-m",
        "compileall",
        "-q",
        "-j",
        "0",
        "--invalidation-mode",
        "unchecked-hash",
    ]
    subprocess.run([*compileall, str(target.root)], check=True, stdout=subprocess.DEVNULL)
    return target
