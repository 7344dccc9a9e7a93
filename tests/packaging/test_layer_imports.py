"""`sam build`, then import every handler the way Lambda loads it.

Lambda puts the function's code first on sys.path, then the layer (/opt/python), then the
runtime's own packages (boto3 and friends). Each handler module is imported here in a fresh
interpreter started with ``-I -S`` (no environment, no site-packages) whose sys.path is exactly
that: <build>/<Function>, <build>/CoreLayer/python and a directory holding only the packages
the Lambda runtime provides. So the layer's requirements.txt plus the layer and function code
must be enough, and nothing from the dev venv can stand in for a missing dependency.

The real build is arm64 (the template's architecture) and its native extensions cannot load
on an x86_64 machine. There the same template is also built for x86_64 (a copy with only the
architecture changed, and LAYER_ARCH=x86_64 for the layer's Makefile build), the imports run on that
build, and the two builds are required to hold exactly the same distributions at the same versions,
so the import proof carries over.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from devserver.lambda_env import lambda_environment

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = REPO / "template.yaml"
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from devserver.cfn_yaml import load_template  # noqa: E402
from devserver.sam_cli import host_arch, sam_cli, sam_env  # noqa: E402

pytestmark = [pytest.mark.packaging, pytest.mark.timeout(1800)]

# function logical id -> (handler module, attribute that must exist, extra modules to import)
FUNCTIONS = {
    # otel_tracing: the OpenTelemetry SDK and OTLP/HTTP exporter load from the layer alone.
    "ApiFunction": ("app", "handler", ["rag_orchestrator.otel_tracing"]),
    "ChatStreamFunction": ("app", "app", ["uvicorn", "rag_orchestrator.otel_tracing"]),
    "ArchiveFunction": ("app", "handler", []),
    "IngestFunction": ("app", "handler", []),
    "LifecycleFunction": ("app", "handler", []),
    # The engines a deployed function may be configured with (rapidocr and pocketsphinx are dev-only).
    "AttachmentFunction": (
        "app",
        "handler",
        [
            f"rag_orchestrator.attachments.{m}"
            for m in ("ocr", "transcribe", "captions", "speech", "documents")
        ],
    ),
}
# What the Lambda python3.12 runtime provides besides the standard library.
RUNTIME_PACKAGES = ["boto3", "botocore", "s3transfer", "jmespath", "dateutil", "urllib3", "six"]
LAMBDA_UNZIPPED_LIMIT = 250 * 1024 * 1024
SIZE_BUDGET = 120 * 1024 * 1024  # issue 9's goal for a function plus its layers (bench/size.py reports it)
ADAPTER_LAYER_ALLOWANCE = 10 * 1024 * 1024  # the Lambda Web Adapter layer on ChatStreamFunction


# ---------------------------------------------------------------- helpers


def dir_size(path: Path) -> int:
    return sum(p.lstat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def distributions(site: Path) -> dict[str, str]:
    """name -> version of every *.dist-info directory under site."""
    found = {}
    for info in site.glob("*.dist-info"):
        name, _, version = info.name[: -len(".dist-info")].partition("-")
        found[name.lower().replace("_", "-")] = version
    return found


def template_for(arch: str) -> dict:
    """template.yaml with the functions and the layer built for `arch`, and absolute code paths
    (the copy lives outside the repository)."""
    template = copy.deepcopy(load_template(TEMPLATE))
    template.setdefault("Globals", {}).setdefault("Function", {})["Architectures"] = [arch]
    for resource in template["Resources"].values():
        props = resource.get("Properties", {})
        if resource["Type"] == "AWS::Serverless::Function":
            if "Architectures" in props:
                props["Architectures"] = [arch]
            props["CodeUri"] = str(REPO / props["CodeUri"])
        elif resource["Type"] == "AWS::Serverless::LayerVersion":
            props["CompatibleArchitectures"] = [arch]
            props["ContentUri"] = str(REPO / props["ContentUri"])
            resource.setdefault("Metadata", {})["BuildArchitecture"] = arch
    return template


@dataclass
class Build:
    arch: str
    root: Path  # the --build-dir
    log: str

    def function_dir(self, logical_id: str) -> Path:
        return self.root / logical_id

    @property
    def layer_site(self) -> Path:
        return self.root / "CoreLayer" / "python"


def start_build(template: Path, build_dir: Path, work: Path, env: dict) -> subprocess.Popen:
    args = [
        str(sam_cli()),
        "build",
        "--template-file",
        str(template),
        "--build-dir",
        str(build_dir),
        "--cache-dir",
        str(work / "cache"),
    ]
    log = (work / "build.log").open("w")
    return subprocess.Popen(args, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)


@pytest.fixture(scope="session")
def builds(tmp_path_factory) -> dict[str, Build]:
    """`sam build` of template.yaml (arm64), plus an x86_64 build when the host cannot load arm64."""
    if not sam_cli().exists():
        pytest.fail(
            f"SAM CLI not found at {sam_cli()}: install requirements/sam.txt into .venv-sam or set SAM_CLI"
        )
    base = tmp_path_factory.mktemp("sam")
    env = sam_env(base / "sam-app-dir")
    jobs = {}

    work = base / "arm64"
    work.mkdir()
    # The real template, in the repository (its relative CodeUri resolve against its directory).
    jobs["arm64"] = (work, start_build(TEMPLATE, work / "build", work, env | {"LAYER_ARCH": "arm64"}))

    if host_arch() != "arm64":
        work = base / "x86_64"
        work.mkdir()
        (work / "template.json").write_text(json.dumps(template_for("x86_64"), indent=1))
        x86_env = env | {"LAYER_ARCH": "x86_64"}  # read by layers/core/build_layer.py
        jobs["x86_64"] = (work, start_build(work / "template.json", work / "build", work, x86_env))

    result = {}
    for arch, (work, process) in jobs.items():
        code = process.wait(timeout=1500)
        log = (work / "build.log").read_text()
        assert code == 0, f"sam build ({arch}) failed:\n{log[-6000:]}"
        result[arch] = Build(arch, work / "build", log)
    return result


@pytest.fixture(scope="session")
def runtime_packages(tmp_path_factory) -> Path:
    """A directory holding only what the Lambda runtime provides (boto3 & co), as symlinks."""
    import importlib.util

    target = tmp_path_factory.mktemp("lambda-runtime")
    for name in RUNTIME_PACKAGES:
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin, f"{name} is not installed in the dev venv"
        source = Path(spec.origin)
        if source.name == "__init__.py":
            source = source.parent
        (target / source.name).symlink_to(source)
    return target


def lambda_env(function_dir: Path, logical_id: str) -> dict[str, str]:
    """What a deployed function has in its environment (values for a test account)."""
    return lambda_environment(str(function_dir), logical_id)


# Runs in the child interpreter: set sys.path as Lambda does, forbid the network, import.
CHILD = r"""
import importlib, json, socket, sys

cfg = json.loads(sys.argv[1])
sys.path[:0] = cfg["path"]

def _no_network(*args, **kwargs):
    raise OSError(f"network access while importing the handler: {args!r}")

_connect = socket.socket.connect
def _connect_local_only(self, address, *args):
    if self.family == socket.AF_UNIX:
        return _connect(self, address, *args)
    _no_network(address)

socket.socket.connect = _connect_local_only
socket.socket.connect_ex = _connect_local_only
socket.getaddrinfo = _no_network
socket.create_connection = _no_network

report = {"modules": {}}
module = importlib.import_module(cfg["module"])
report["modules"][cfg["module"]] = module.__file__
report["has_attr"] = hasattr(module, cfg["attr"])
report["attr_type"] = type(getattr(module, cfg["attr"], None)).__name__
for name in cfg["extra"] + ["rag_orchestrator"]:
    report["modules"][name] = importlib.import_module(name).__file__
outside = sorted(
    name for name, mod in list(sys.modules.items())
    if getattr(mod, "__file__", None)
    and not any(mod.__file__.startswith(p) for p in cfg["allowed"])
)
report["outside"] = outside
print("\n@@REPORT@@" + json.dumps(report))
"""


def import_in_lambda_layout(build: Build, logical_id: str, runtime_packages: Path) -> dict:
    module, attr, extra = FUNCTIONS[logical_id]
    function_dir = build.function_dir(logical_id)
    cfg = {
        "path": [str(function_dir), str(build.layer_site), str(runtime_packages)],
        "module": module,
        "attr": attr,
        "extra": extra,
        # the standard library of the interpreter (-S keeps its site-packages off sys.path)
        "allowed": [str(function_dir), str(build.layer_site), str(runtime_packages), sys.base_prefix],
    }
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-c", CHILD, json.dumps(cfg)],
        cwd=function_dir,
        env=lambda_env(function_dir, logical_id),
        capture_output=True,
        text=True,
        timeout=300,
    )
    elapsed = time.perf_counter() - started
    assert proc.returncode == 0, (
        f"{logical_id}: importing {module} the way Lambda does failed\n{proc.stdout[-4000:]}\n{proc.stderr[-8000:]}"
    )
    report = json.loads(proc.stdout.rsplit("@@REPORT@@", 1)[1])
    print(f"{logical_id}: imported {module} in {elapsed:.2f}s (wall, incl. interpreter start; not asserted)")
    for name, origin in report["modules"].items():
        print(f"    {name:16} {origin}")
    return report


# ---------------------------------------------------------------- tests


def test_build_sizes(builds):
    build = builds["arm64"]
    layer = dir_size(build.root / "CoreLayer")
    print(f"\nunzipped sizes of the arm64 build in {build.root}:")
    print(f"    {'CoreLayer':20} {layer / 2**20:8.1f} MiB")
    for logical_id in FUNCTIONS:
        size = dir_size(build.function_dir(logical_id))
        print(f"    {logical_id:20} {size / 2**20:8.1f} MiB   (with layer {(size + layer) / 2**20:.1f} MiB)")
        limit = LAMBDA_UNZIPPED_LIMIT - (ADAPTER_LAYER_ALLOWANCE if logical_id == "ChatStreamFunction" else 0)
        assert size + layer < limit, f"{logical_id} + CoreLayer exceed Lambda's 250 MB unzipped limit"
        assert size + layer < SIZE_BUDGET, f"{logical_id} + CoreLayer: {(size + layer) / 2**20:.1f} MiB"


@pytest.mark.skipif(sys.version_info[:2] != (3, 12), reason="compares with this interpreter's magic number")
def test_layer_ships_bytecode_for_python312(builds):
    """Dependencies as bytecode only, rag_orchestrator as sources + unchecked-hash .pyc, no test suites."""
    import importlib.util

    for build in builds.values():
        site = build.layer_site
        ours = site / "rag_orchestrator"
        theirs = [p for p in site.rglob("*.py") if not p.is_relative_to(ours)]
        assert not theirs, f"{build.arch}: dependency sources shipped: {theirs[:5]}"
        routing = site / "fastapi" / "routing.pyc"
        assert routing.is_file(), f"{build.arch}: fastapi is not compiled"
        assert routing.read_bytes()[:4] == importlib.util.MAGIC_NUMBER, (
            f"{routing}: not CPython 3.12 bytecode"
        )
        assert not (site / "pydantic" / "v1").exists(), f"{build.arch}: pydantic.v1 (unused) shipped"
        suites = [p for p in site.rglob("test*") if p.is_dir() and p.name in ("test", "tests")]
        assert not suites, f"{build.arch}: test suites shipped: {suites[:5]}"
        for source in ours.rglob("*.py"):
            compiled = source.parent / "__pycache__" / f"{source.stem}.cpython-312.pyc"
            assert compiled.is_file(), f"{build.arch}: no bytecode for {source.relative_to(site)}"
            header = compiled.read_bytes()[:8]
            assert header[:4] == importlib.util.MAGIC_NUMBER, f"{compiled}: not CPython 3.12 bytecode"
            flags = int.from_bytes(header[4:8], "little")
            assert flags == 0b01, f"{compiled}: not an unchecked-hash .pyc (flags {flags:#b})"


def test_layer_has_no_chromadb_numpy_or_grpc(builds):
    # Chroma is spoken over httpx (retrieval/chroma_http.py); chromadb-client brought numpy, grpc and more.
    heavy = {
        "chromadb",
        "chromadb-client",
        "numpy",
        "grpcio",
        "onnxruntime",
        "opentelemetry-exporter-otlp-proto-grpc",
    }
    for build in builds.values():
        site = build.layer_site
        dists = distributions(site)
        assert not heavy & set(dists), f"{build.arch}: {sorted(heavy & set(dists))}"
        assert not [p.name for p in site.iterdir() if p.name in ("chromadb", "numpy", "grpc", "onnxruntime")]
        assert {"opentelemetry-sdk", "opentelemetry-exporter-otlp-proto-http"} <= set(dists), sorted(dists)
        assert "rag_orchestrator" in {p.name for p in site.iterdir()}, f"{build.arch}: the core package"


def test_layer_is_built_for_arm64(builds):
    native = list(builds["arm64"].layer_site.rglob("*.so"))
    foreign = [p for p in native if "x86_64" in p.name]
    assert not foreign, f"x86_64 extensions in the arm64 layer: {foreign[:5]}"


def test_arm64_and_import_check_builds_hold_the_same_distributions(builds):
    # On an arm64 host the import check runs on the arm64 build itself and this compares it with itself.
    check = builds[host_arch()]
    arm = distributions(builds["arm64"].layer_site)
    other = distributions(check.layer_site)
    assert arm == other, {
        "only arm64": {k: v for k, v in arm.items() if other.get(k) != v},
        f"only {check.arch}": {k: v for k, v in other.items() if arm.get(k) != v},
    }
    for logical_id in FUNCTIONS:
        arm_fn = distributions(builds["arm64"].function_dir(logical_id))
        other_fn = distributions(check.function_dir(logical_id))
        assert arm_fn == other_fn, logical_id


@pytest.mark.skipif(sys.platform != "linux", reason="the built layer holds Linux extensions")
@pytest.mark.skipif(sys.version_info[:2] != (3, 12), reason="Lambda runs python3.12")
@pytest.mark.parametrize("logical_id", list(FUNCTIONS))
def test_handler_imports_from_layer_and_function_code_only(builds, runtime_packages, logical_id):
    build = builds[host_arch()]
    report = import_in_lambda_layout(build, logical_id, runtime_packages)
    module, attr, _ = FUNCTIONS[logical_id]
    assert report["has_attr"], f"{logical_id}: {module}.{attr} is missing"
    assert report["modules"]["rag_orchestrator"].startswith(str(build.layer_site)), report["modules"]
    assert report["modules"][module].startswith(str(build.function_dir(logical_id))), report["modules"]
    assert not report["outside"], f"modules loaded from outside the Lambda layout: {report['outside']}"


def test_chat_stream_entry_point(builds):
    function_dir = builds["arm64"].function_dir("ChatStreamFunction")
    run = function_dir / "run.sh"
    assert run.is_file(), "run.sh (the handler of ChatStreamFunction) is not in the build"
    assert os.access(run, os.X_OK), "run.sh must be executable: the Lambda Web Adapter execs it"
    text = run.read_text()
    assert text.startswith("#!"), "run.sh needs a shebang"
    assert "uvicorn" in text and "app:app" in text
