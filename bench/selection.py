"""Tool selection: building the tool index once, then choosing tools per message, at 30, 300, 3,000 tools.

The 30-tool catalogue of the selection-quality tests (tests/data/tool_catalog_30.yaml), and 10
variants of each tool for 300, 100 for 3,000; the offline hashing embedder; the held-out questions
of those tests.
"""

from __future__ import annotations

import asyncio
import time

from bench.report import Section

COPIES = (1, 10, 100)


def run(quick: bool = False) -> Section:
    from tests.unit.test_tool_selection_quality import HELD_OUT, ROLES, _scaled, load_offers, selector

    section = Section("selection")
    questions = [q for qs in HELD_OUT.values() for q in qs]
    rounds = 1 if quick else 5

    async def main() -> None:
        for copies in COPIES:
            offers = _scaled(load_offers(), copies)
            builds, per_message = [], []
            for _ in range(rounds):
                chooser = selector(offers)
                started = time.perf_counter()
                await chooser.select("warm up the index", None, ROLES)
                builds.append((time.perf_counter() - started) * 1000)
                started = time.perf_counter()
                for question in questions:
                    await chooser.select(question, None, ROLES)
                per_message.append((time.perf_counter() - started) * 1000 / len(questions))
            section.add(f"{len(offers)} tools: index build (once per process)", "ms", builds)
            section.add(f"{len(offers)} tools: selection per message", "ms", per_message)

    asyncio.run(main())
    return section
