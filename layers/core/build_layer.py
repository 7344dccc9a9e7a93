"""Build the core layer: requirements.txt + rag_orchestrator under <artifacts>/python, byte-compiled.

`sam build` runs this through layers/core/Makefile (BuildMethod: makefile) in a scratch copy of
layers/core, with ARTIFACTS_DIR set. bench/layout.py runs it too, so the benchmarks measure what
ships. Why not SAM's python3.12 builder: it ships no .pyc, and /opt is read-only on Lambda, so every
cold start compiled every module it imported (chat_stream's app: 0.97 s to import from source,
0.41 s from bytecode). Here:

1. the wheels for Lambda's platform (LAYER_ARCH: arm64, the template's, or x86_64) and CPython 3.12,
   with uv when it is on PATH (`make build` puts .venv/bin there), else pip;
2. test suites and type stubs of the installed packages are dropped (never imported at run time),
   and so is pydantic.v1 (see UNUSED);
3. everything is compiled by CPython 3.12 (the runtime's bytecode version). The dependencies ship as
   bytecode only (.pyc in place of each .py): sources beside their bytecode would add ~25 MB and put
   the layer over the 120 MB budget; their tracebacks keep file names and line numbers, not the
   source text. rag_orchestrator ships its sources with unchecked-hash .pyc (valid without source
   timestamps, which zip deployment does not keep). Code paths are rewritten to /opt/python, where
   Lambda mounts the layer.

Usage: python3.12 build_layer.py ARTIFACTS_DIR   (or: make -C layers/core build-CoreLayer ARTIFACTS_DIR=…)
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
LAMBDA_PYTHON = (3, 12)
RUNTIME_PATH = "/opt/python"  # where Lambda mounts a layer's python/ directory
PLATFORMS = {  # LAYER_ARCH -> (uv's --python-platform, pip's --platform)
    "arm64": ("aarch64-manylinux_2_28", "manylinux_2_28_aarch64"),
    "x86_64": ("x86_64-manylinux_2_28", "manylinux_2_28_x86_64"),
}
# Directory names of test suites shipped inside wheels (numpy, jsonschema, chromadb…).
TEST_DIRS = {"tests", "test"}
# Packages nothing here runs. pydantic.v1, the Pydantic 1 compatibility copy: only FastAPI imports
# it, to refuse v1 models, and treats its absence as "no v1 models" (fastapi/_compat/shared.py);
# importing it cost ~50 ms of every API and chat-stream cold start.
UNUSED = ("pydantic/v1",)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    arch = os.environ.get("LAYER_ARCH", "arm64")
    if arch not in PLATFORMS:
        print(f"LAYER_ARCH must be one of {', '.join(PLATFORMS)}, got {arch!r}", file=sys.stderr)
        return 2
    target = Path(argv[1]).resolve() / "python"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    install(target, arch)
    shutil.copytree(
        HERE / "rag_orchestrator",
        target / "rag_orchestrator",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    strip(target)
    compile_bytecode(target)
    return 0


def install(target: Path, arch: str) -> None:
    requirements = str(HERE / "requirements.txt")
    uv_platform, pip_platform = PLATFORMS[arch]
    version = ".".join(map(str, LAMBDA_PYTHON))
    uv = shutil.which("uv")
    if uv:
        command = [uv, "pip", "install", "--quiet", "--target", str(target), "--no-compile"]
        command += ["--python-platform", uv_platform, "--python-version", version]
    else:
        command = [sys.executable, "-m", "pip", "install", "--quiet", "--target", str(target), "--no-compile"]
        command += ["--platform", pip_platform, "--implementation", "cp", "--python-version", version]
    command += ["--only-binary", ":all:", "-r", requirements]
    subprocess.run(command, check=True)


def strip(target: Path) -> None:
    """Drop what no import reaches: wheels' test suites, .pyi stubs (not in rag_orchestrator), UNUSED."""
    for unused in UNUSED:
        shutil.rmtree(target / unused)
    for path in sorted(target.rglob("*"), reverse=True):
        if path.parts[len(target.parts)] == "rag_orchestrator" or not path.exists():
            continue
        if path.is_dir() and path.name in TEST_DIRS:
            shutil.rmtree(path)
        elif path.suffix == ".pyi" and path.is_file():
            path.unlink()


def compile_bytecode(target: Path) -> None:
    """Dependencies: bytecode in place of the sources; rag_orchestrator: sources + __pycache__."""
    if sys.version_info[:2] == LAMBDA_PYTHON:
        python = sys.executable
    else:
        python = shutil.which("python{}.{}".format(*LAMBDA_PYTHON)) or ""
        if not python:
            raise SystemExit(
                "build_layer: Lambda's python3.12 bytecode needs CPython 3.12; put python3.12 on PATH"
            )
    compileall = [python, "-m", "compileall", "-q", "-q", "-f", "-j", "0"]
    compileall += ["-s", str(target), "-p", RUNTIME_PATH]  # paths as Lambda will see them
    ours = target / "rag_orchestrator"
    subprocess.run([*compileall, "-b", "-x", "^" + re.escape(str(ours)), str(target)], check=True)
    for source in target.rglob("*.py"):
        if not source.is_relative_to(ours) and source.with_suffix(".pyc").is_file():
            source.unlink()
    subprocess.run([*compileall, "--invalidation-mode", "unchecked-hash", str(ours)], check=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
