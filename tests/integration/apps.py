"""The functions' apps in uvicorn processes of their own on loopback, as the Lambda Web Adapter runs them.

Each process gets the test's environment (moto, Chroma, local defaults) and the fake LLM's settings,
so two of them share one table and one knowledge base: what one writes, the other reads.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from devserver.stack import ROOT, Service, free_port, wait_http
from tests.fakes.fake_llm import FakeLLM


def app_env(llm: FakeLLM, **settings: str) -> dict[str, str]:
    """The test process's environment, the model pointed at `llm`, and `settings` (NAME=value)."""
    env = dict(os.environ)
    env |= {key.upper(): str(value) for key, value in llm.settings_for("openai_compatible").items()}
    env |= {"PYTHONPATH": str(ROOT / "layers" / "core"), **settings}
    return env


class AppProcess:
    """`functions/<function>/app.py`'s app served by uvicorn on a free port."""

    def __init__(self, function: str, env: dict[str, str], log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        argv = [sys.executable, "-m", "uvicorn", "--app-dir", str(ROOT / "functions" / function)]
        argv += ["--host", "127.0.0.1", "--port", str(self.port), "--no-access-log", "app:app"]
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as out:
            self.process = subprocess.Popen(
                argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.stop = Service(function, self.url, self.process).stop
        try:
            wait_http(f"{self.url}/api/v1/agent/ping", timeout=60, process=self.process)
        except Exception:
            self.stop()
            raise RuntimeError(f"{function} app did not start; see {log}") from None

    def kill(self) -> None:
        """SIGKILL: what Lambda does to a function at its timeout."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)
