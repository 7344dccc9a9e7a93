"""`.local/dev.env`: what `make dev` resolved, read by `make invoke` while that stack runs."""

from __future__ import annotations

import os
import subprocess
import sys

from devserver import dev_env


def test_the_stacks_settings_are_written_without_secrets_or_credentials(tmp_path):
    environ = {
        "PORT": "8100",
        "CHROMA_URL": "http://127.0.0.1:8101",
        "AWS_ENDPOINT_URL": "http://127.0.0.1:5101",
        "DEMO_TOOLS_URL": "http://127.0.0.1:8100/demo-tools",
        "DEEPSEEK_API_KEY": "sk-secret",
        "AWS_SECRET_ACCESS_KEY": "real-credential",
        "HOME": "/home/me",
    }
    text = dev_env.write(environ, tmp_path).read_text()
    assert "sk-secret" not in text and "real-credential" not in text and "HOME" not in text
    assert dev_env.read(tmp_path) == {
        "PORT": "8100",
        "CHROMA_URL": "http://127.0.0.1:8101",
        "AWS_ENDPOINT_URL": "http://127.0.0.1:5101",
        "DEMO_TOOLS_URL": "http://127.0.0.1:8100/demo-tools",
    }


def test_a_file_left_by_a_stack_that_stopped_is_ignored(tmp_path):
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    (tmp_path / dev_env.FILE_NAME).write_text(f"{dev_env.PID}={gone.stdout.strip()}\nPORT=8100\n")
    assert dev_env.read(tmp_path) == {}
    assert dev_env.read(tmp_path / "nowhere") == {}


def test_a_stack_removes_only_the_file_it_wrote(tmp_path):
    path = tmp_path / dev_env.FILE_NAME
    path.write_text(f"{dev_env.PID}=1\nPORT=8100\n")  # another stack's, sharing the directory
    dev_env.remove(tmp_path)
    assert path.exists()
    dev_env.write({"PORT": "8000"}, tmp_path)
    assert f"{dev_env.PID}={os.getpid()}" in path.read_text()
    dev_env.remove(tmp_path)
    assert not path.exists()
