"""Size: the unzipped size of each function plus its layers, as `sam build` of template.yaml makes them.

Builds the real template (arm64, as deployed) into .aws-sam/bench-build: the core layer through
layers/core/build_layer.py (bytecode included, dependencies without their sources). ChatStreamFunction also
carries AWS's Lambda Web Adapter layer, which is not part of the build; its size is noted, not added.
Also lists the layer's largest top-level entries, to show where the megabytes come from.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from bench.report import ROOT, Section
from devserver.sam_cli import sam_cli, sam_env

GOAL_MB = 120
BUILD = ROOT / ".aws-sam" / "bench-build"
LAYER = "CoreLayer"
MB = 1024 * 1024


def dir_size(path: Path) -> int:
    return sum(p.lstat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def build() -> Path:
    if not sam_cli().exists():
        subprocess.run(["bash", "devserver/bootstrap.sh", "sam"], cwd=ROOT, check=True)
    command = [
        str(sam_cli()),
        "build",
        "--build-dir",
        str(BUILD),
        "--cache-dir",
        str(ROOT / ".aws-sam" / "bench-cache"),
    ]
    proc = subprocess.run(
        command,
        cwd=ROOT,
        env=sam_env(ROOT / ".aws-sam" / "bench-sam-app"),
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"sam build failed:\n{(proc.stdout + proc.stderr)[-3000:]}")
    return BUILD


# What-if variants of layers/core/requirements.txt, installed for arm64 with uv: sources only, no bytecode,
# so the variants compare with each other (not with the layer above).
ALTERNATIVES = {
    "as they are": lambda lines: lines,
    "with aws-lambda-powertools[tracer] (aws-xray-sdk, botocore)": lambda lines: [
        line.replace("aws-lambda-powertools==", "aws-lambda-powertools[tracer]==") for line in lines
    ],
    # What the layer held until writes spoke Chroma's REST API themselves (numpy, grpc, its OTLP/gRPC exporter).
    "with chromadb-client==1.5.9 (the layer until issue 35's third round)": lambda lines: [
        *lines,
        "chromadb-client==1.5.9",
    ],
}


def alternatives() -> dict[str, float]:
    """MB of the layer's packages for each variant of its requirements."""
    lines = (ROOT / "layers" / "core" / "requirements.txt").read_text().splitlines()
    lines = [line for line in lines if line.strip() and not line.startswith("#")]
    work = ROOT / ".aws-sam" / "bench-alternatives"
    work.mkdir(parents=True, exist_ok=True)
    sizes = {}
    for name, change in ALTERNATIVES.items():
        target = work / str(len(sizes))
        shutil.rmtree(target, ignore_errors=True)
        requirements = work / f"{len(sizes)}.txt"
        requirements.write_text("\n".join(change(lines)) + "\n")
        command = [str(ROOT / ".venv" / "bin" / "uv"), "pip", "install", "--quiet", "--target", str(target)]
        command += ["--python-platform", "aarch64-manylinux_2_28", "--python-version", "3.12"]
        command += ["--only-binary", ":all:", "-r", str(requirements)]
        subprocess.run(command, cwd=ROOT, check=True, timeout=900)
        sizes[f"layer requirements {name}"] = round(dir_size(target) / MB, 1)
    return sizes


def _functions() -> list[str]:
    from devserver.cfn_yaml import load_template

    resources = load_template(ROOT / "template.yaml")["Resources"]
    return [name for name, r in resources.items() if r["Type"] == "AWS::Serverless::Function"]


def run(quick: bool = False) -> Section:
    section = Section("size", packages=[])
    root = build()
    layer = dir_size(root / LAYER)
    section.add(f"{LAYER} (the rag_orchestrator layer)", "MB", layer / MB)
    for name in _functions():
        path = root / name
        if not path.is_dir():
            section.details.setdefault("not built", []).append(name)
            continue
        code = dir_size(path)
        note = "+ the Lambda Web Adapter layer (AWS's, ~5 MB)" if name == "ChatStreamFunction" else ""
        figure = section.add(f"{name} + {LAYER}", "MB", (code + layer) / MB, note=note)
        figure.goal, figure.met = f"< {GOAL_MB} MB", figure.median < GOAL_MB
    site = root / LAYER / "python"
    bytecode = sum(p.stat().st_size for p in site.rglob("*.pyc"))
    section.details["bytecode in the layer (MB)"] = round(bytecode / MB, 1)
    entries = sorted(((dir_size(p) if p.is_dir() else p.stat().st_size), p.name) for p in site.iterdir())
    section.details["largest entries of the layer"] = [
        {"entry": name, "MB": round(size / MB, 1)} for size, name in reversed(entries[-15:])
    ]
    section.details["alternatives: MB of the layer's packages (uv, arm64 wheels)"] = alternatives()
    return section
