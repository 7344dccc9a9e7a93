"""The SAM CLI as the packaging tests and the size benchmark run it (never deployed)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def sam_cli() -> Path:
    """$SAM_CLI, else .venv-sam/bin/sam (relative paths are from the repo root)."""
    path = Path(os.environ.get("SAM_CLI", ".venv-sam/bin/sam"))
    return path if path.is_absolute() else ROOT / path


def sam_env(app_dir: Path) -> dict[str, str]:
    """No telemetry, no version check against the internet, SAM's config kept out of $HOME; this
    interpreter's directory first on PATH, for the layer's build (layers/core/build_layer.py runs
    python3.12 and uv from there)."""
    app_dir.mkdir(parents=True, exist_ok=True)
    (app_dir / "metadata.json").write_text(
        json.dumps({"telemetryEnabled": False, "lastVersionCheck": time.time()})
    )
    env = dict(os.environ)
    env |= {"SAM_CLI_TELEMETRY": "0", "__SAM_CLI_APP_DIR": str(app_dir)}
    env.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def host_arch() -> str:
    """The Lambda architecture this machine's interpreter can load extensions of."""
    import platform

    return "arm64" if platform.machine().lower() in ("aarch64", "arm64") else "x86_64"
