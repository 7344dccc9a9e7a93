"""The fake LLM in a process of its own, answering every request with one reply of N tokens.

`python -m bench.llm_process 1000` prints its base URL and serves until stdin closes. Benchmarks that
time a client's CPU use it so that the server's work, and its hand-offs of the GIL with the client
thread (which a thread in the same process adds to the client's CPU time), stay out of the figure.
"""

from __future__ import annotations

import subprocess
import sys

from bench.report import ROOT


class LLMProcess:
    def __init__(self, tokens: int) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.llm_process", str(tokens)],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().strip()
        if not self.url:
            self.stop()
            raise RuntimeError("the fake LLM process did not start")

    def settings_for(self, strategy: str) -> dict[str, str]:
        return {
            "model_strategy": strategy,
            "openai_compatible_base_url": self.url,
            "openai_compatible_model": "fake-model",
            "openai_compatible_api_key": "bench-key",
        }

    def stop(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)

    def __enter__(self) -> LLMProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(tokens: int) -> None:
    from tests.fakes.fake_llm import FakeLLM
    from tests.fakes.llm_script import text_reply

    with FakeLLM() as llm:
        llm.default = text_reply("word " * tokens, chunks=tokens)
        print(llm.url, flush=True)
        sys.stdin.read()  # until the benchmark closes our stdin (or exits)


if __name__ == "__main__":
    main(int(sys.argv[1]))
