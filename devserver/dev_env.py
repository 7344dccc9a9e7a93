"""`.local/dev.env`: the settings a running `make dev` resolved, for `make invoke` to run against it.

`make dev` writes the file when its stack is up and removes it when it stops; `make invoke` reads it
while that process runs, so a stack on any port (`PORT=8100 ... make dev`) needs nothing exported
by hand. Secrets and AWS credentials are never written: export those where you invoke.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from devserver.stack import LOCAL_DEFAULTS, ROOT

FILE_NAME = "dev.env"
PID = "DEVSERVER_PID"  # the process that wrote the file; not applied to the environment
NEVER_WRITTEN = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"}
ALSO_WRITTEN = {"DEMO_TOOLS_URL", "LOG_LEVEL", "POWERTOOLS_LOG_LEVEL"}


def local_dir() -> Path:
    """Where the dev stack keeps its data, logs and this file ($DEVSERVER_LOCAL_DIR, else .local)."""
    return Path(os.environ.get("DEVSERVER_LOCAL_DIR", ROOT / ".local"))


def app_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables that configure the app and the local stack, without secrets or credentials."""
    from rag_orchestrator.config import SECRET_FIELDS, Settings

    names = {field.upper() for field in Settings.model_fields} | set(LOCAL_DEFAULTS) | ALSO_WRITTEN
    excluded = NEVER_WRITTEN | {field.upper() for field in SECRET_FIELDS}
    return {key: value for key, value in environ.items() if key in names - excluded and "\n" not in value}


def write(environ: Mapping[str, str], directory: Path) -> Path:
    path = directory / FILE_NAME
    directory.mkdir(parents=True, exist_ok=True)
    lines = [f"{PID}={os.getpid()}", *(f"{k}={v}" for k, v in sorted(app_environment(environ).items()))]
    path.write_text(
        "# written by `make dev` while it runs; read by `make invoke`\n" + "\n".join(lines) + "\n"
    )
    return path


def read(directory: Path) -> dict[str, str]:
    """The variables of a running `make dev`; nothing when there is no file or its writer has stopped."""
    values = _entries(directory / FILE_NAME)
    return values if _running(values.pop(PID, "")) else {}


def remove(directory: Path) -> None:
    """The file gone, if this process wrote it (another stack may since have written its own)."""
    path = directory / FILE_NAME
    if _entries(path).get(PID) == str(os.getpid()):
        path.unlink(missing_ok=True)


def _entries(path: Path) -> dict[str, str]:
    if not path.is_file():
        return {}
    lines = path.read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))


def _running(pid: str) -> bool:
    if not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process with that id: not ours
        return False
    return True
