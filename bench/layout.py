"""A Lambda-like file layout on this machine, for the cold-start benchmarks.

Lambda puts the function's code first on sys.path, then the layer (/opt/python), then the
runtime's own boto3 & co; nothing else is installed. Measuring cold starts in the dev venv would
blame the wrong things (it holds rich, the full chromadb…), so this builds the same layout under
.local/bench/lambda:

    built/opt/python/   the core layer, made by layers/core/build_layer.py (what `sam build` runs)
                        for this machine's architecture: bytecode included, as it ships
    built/functions/    a fresh copy of each function's code (+ its requirements.txt, if any)
    runtime/            what the python3.12 runtime provides (boto3, …) at dev.lock's versions

/opt and /var/task are read-only on Lambda, so processes run with PYTHONDONTWRITEBYTECODE=1 and
`python -S` (no site-packages): a module without shipped bytecode is compiled on every cold start,
as it would be there. runtime/ is byte-compiled, as the runtime's own packages are.
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
from devserver.sam_cli import host_arch

BASE = ROOT / ".local" / "bench" / "lambda"
RUNTIME_PACKAGES = ("boto3", "botocore", "s3transfer", "jmespath", "python-dateutil", "urllib3", "six")
UV = ROOT / ".venv" / "bin" / "uv"


def functions() -> list[str]:
    """Every function that has an app module: new functions are picked up without a change here."""
    return sorted(p.parent.name for p in (ROOT / "functions").glob("*/app.py"))


def _runtime_pins() -> list[str]:
    wanted = {name.replace("-", "_") for name in RUNTIME_PACKAGES}
    pins = []
    for line in (ROOT / "requirements" / "dev.lock").read_text().splitlines():
        name = line.split("==")[0].strip().lower().replace("-", "_")
        if "==" in line and name in wanted:
            pins.append(line.split(";")[0].strip())
    return pins


def _install(target: Path, args: list[str], stamp_text: str) -> None:
    """Packages into target with their bytecode (as the runtime's are), when args changed."""
    stamp = target / ".stamp"
    wanted = hashlib.sha256(stamp_text.encode()).hexdigest()
    if stamp.exists() and stamp.read_text() == wanted:
        return
    shutil.rmtree(target, ignore_errors=True)
    command = [str(UV), "pip", "install", "--quiet", "--target", str(target), "--python", sys.executable]
    command += [*args, "--compile-bytecode"]
    subprocess.run(command, check=True, cwd=ROOT)
    stamp.write_text(wanted)


def _has_requirements(path: Path) -> bool:
    lines = path.read_text().splitlines() if path.is_file() else []
    return any(line.strip() and not line.lstrip().startswith("#") for line in lines)


def _copy_sources(source: Path, target: Path) -> None:
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


@dataclass(frozen=True)
class Layout:
    root: Path
    runtime: Path
    shared_layer: Path | None = None  # the dependencies, when root's layer holds only rag_orchestrator
    own_packages: Path | None = None  # what root's code needs that the shared layer no longer ships

    @property
    def layer(self) -> Path:
        return self.root / "opt" / "python"

    def function_dir(self, name: str) -> Path:
        return self.root / "functions" / name

    def pythonpath(self, function: str) -> str:
        paths = (self.function_dir(function), self.layer, self.shared_layer, self.own_packages, self.runtime)
        return os.pathsep.join(str(p) for p in paths if p is not None)

    def env(self, function: str, **extra: str) -> dict[str, str]:
        """The environment of a deployed function (template.yaml's Globals, Lambda's own variables)."""
        task_root = str(self.function_dir(function))
        env = lambda_environment(task_root, function, stage="bench")
        env.update(PYTHONPATH=self.pythonpath(function), PYTHONDONTWRITEBYTECODE="1")
        env.update(extra)
        return env


def prepare() -> Layout:
    """Build the layer and copy the functions (every time: a build takes seconds with uv's cache)."""
    pins = _runtime_pins()
    runtime = BASE / "runtime"
    _install(runtime, pins, "\n".join(pins) + sys.version)
    layout = Layout(root=BASE / "built", runtime=runtime)
    env = dict(
        os.environ, LAYER_ARCH=host_arch(), PATH=f"{UV.parent}{os.pathsep}{os.environ.get('PATH', '')}"
    )
    build = [sys.executable, str(ROOT / "layers" / "core" / "build_layer.py"), str(layout.layer.parent)]
    subprocess.run(build, check=True, env=env, cwd=ROOT)
    for name in functions():
        target = layout.function_dir(name)
        _copy_sources(ROOT / "functions" / name, target)
        if _has_requirements(
            target / "requirements.txt"
        ):  # SAM's python builder installs them beside the code
            command = [
                str(UV),
                "pip",
                "install",
                "--quiet",
                "--target",
                str(target),
                "--python",
                sys.executable,
            ]
            subprocess.run([*command, "-r", str(target / "requirements.txt")], check=True, cwd=ROOT)
    return layout


# The code before the third wave's cold-start work (issue 35): main as that work began. The cold
# benchmark runs its chat-stream function beside today's, process by process, on the same dependencies.
BASELINE_COMMIT = "579d73d7bf98b4fdc91c4b03c996a5e78fbd48f7"
BASELINE_PATHS = ("layers/core/rag_orchestrator", "functions/chat_stream")
# The baseline writes to Chroma through chromadb-client, which the layer no longer ships: it gets its own
# copy (behind the shared layer, at dev.lock's versions), so its first turn pays what it paid then.
BASELINE_PACKAGES = ("chromadb-client==1.5.9",)


def prepare_baseline(layout: Layout, commit: str = BASELINE_COMMIT) -> Layout:
    """BASELINE_COMMIT's rag_orchestrator and chat-stream function (from git, byte-compiled as the layer
    ships them), over `layout`'s dependencies and runtime."""
    root = BASE / f"baseline-{commit[:12]}"
    layer = root / "opt" / "python"
    if not (root / ".stamp").is_file():
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        archive = subprocess.run(
            ["git", "archive", "--format=tar", commit, *BASELINE_PATHS],
            cwd=ROOT,
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
        layer.mkdir(parents=True)
        (root / "layers" / "core" / "rag_orchestrator").rename(layer / "rag_orchestrator")
        (root / "functions" / "chat_stream").rename(root / "chat_stream")
        shutil.rmtree(root / "functions")
        (root / "functions").mkdir()
        (root / "chat_stream").rename(root / "functions" / "chat_stream")
        shutil.rmtree(root / "layers")
        _compile_layer(layer)
        (root / ".stamp").write_text(commit)
    own = BASE / "baseline-packages"
    constraints = ["-c", str(ROOT / "requirements" / "dev.lock")]
    _install(own, [*BASELINE_PACKAGES, *constraints], "\n".join(BASELINE_PACKAGES) + sys.version)
    return Layout(root=root, runtime=layout.runtime, shared_layer=layout.layer, own_packages=own)


def _compile_layer(layer: Path) -> None:
    """rag_orchestrator's bytecode as layers/core/build_layer.py makes it."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("build_layer", ROOT / "layers" / "core" / "build_layer.py")
    assert spec is not None and spec.loader is not None
    build_layer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build_layer)
    build_layer.compile_bytecode(layer)
