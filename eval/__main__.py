"""`python -m eval [--embedders hashing,wordllama] [--misses] [--turns]`: ingest eval/corpus/ into a Chroma server of its own
(data under .local/eval/), ask every question of eval/questions.yaml, print retrieval hit@1/hit@3 and answer
accuracy per embedder and strategy, then ask the README's sample question of the sample knowledge base.

Strategies: the offline `extractive` always, and MODEL_STRATEGY from the environment when it names another
(its keys and URLs from the environment too). Embedders: `hashing`, `wordllama` when installed, and
EMBEDDING_PROVIDER from the environment when it names another. Retrieval uses the topK and similarity
threshold `make dev` would use for that embedder. `--turns` also asks the set as chat turns with
conversation memory on and off (eval/turns.py).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import io
import logging
import os
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")  # a log line per search would bury the table
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
logging.disable(logging.INFO)
sys.path.insert(0, str(ROOT / "layers" / "core"))
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from devserver.stack import apply_local_defaults, free_port, start_chroma  # noqa: E402
from eval.scoring import Question, Tally, corpus_documents, load_questions, ranked_documents, table  # noqa: E402

README_QUESTION = "How do I run the tests?"
README_FACT = "make test"


def default_embedders() -> list[str]:
    chosen = ["hashing"]
    if importlib.util.find_spec("wordllama"):
        chosen.append("wordllama")
    configured = os.environ.get("EMBEDDING_PROVIDER")
    if configured and configured not in chosen:
        chosen.append(configured)
    return chosen


def strategies() -> list[str]:
    configured = os.environ.get("MODEL_STRATEGY")
    return ["extractive", *([configured] if configured and configured != "extractive" else [])]


def settings_for(embedder: str, collection: str, chroma_url: str):
    from rag_orchestrator.config import load_settings

    defaults = apply_local_defaults({"EMBEDDING_PROVIDER": embedder})
    threshold = float(
        os.environ.get("RAG_SIMILARITY_THRESHOLD") or defaults.get("RAG_SIMILARITY_THRESHOLD", 0.6)
    )
    return load_settings(
        embedding_provider=embedder,
        chroma_url=chroma_url,
        chroma_collection=f"{collection}-{embedder.replace('_', '-')}",
        conversation_storage="memory",
        rag_similarity_threshold=threshold,
    )


async def ask(question: str, settings, strategy) -> tuple[list[str], list[str], str]:
    """The document ids retrieval ranks for the question, the passages' texts, and the strategy's answer."""
    from rag_orchestrator.retrieval.answers import AnswerQuery, answer_events, collect_answer
    from rag_orchestrator.retrieval.search import search

    found = await search(question, top_k=settings.rag_topk_default, threshold=0.0, settings=settings)
    request = AnswerQuery(
        question, top_k=settings.rag_topk_default, threshold=settings.rag_similarity_threshold
    )
    answer = await collect_answer(answer_events(request, settings, strategy))
    return ranked_documents([p.document_id for p in found]), [p.text for p in found], answer.answer


async def evaluate(questions: list[Question], settings, strategy) -> Tally:
    from rag_orchestrator.retrieval.answers import NO_CONTEXT_ANSWER

    tally = Tally()
    for q in questions:
        documents, passages, answer = await ask(q.question, settings, strategy)
        tally.add(q, documents, passages, answer, nothing=answer.startswith(NO_CONTEXT_ANSWER[:30]))
    return tally


def run_turns(embedders: list[str], chroma_url: str) -> list[dict[str, str]]:
    """The set as chat turns of the extractive model, memory on and off (eval/turns.py)."""
    from eval.turns import ask_as_turns

    rows = []
    for embedder in embedders:
        settings = settings_for(embedder, "eval", chroma_url)  # ingested by run()
        for memory in (False, True):
            with contextlib.redirect_stdout(io.StringIO()):
                tally = asyncio.run(ask_as_turns(load_questions(), settings, memory=memory))
            name = f"extractive turns, memory {'on' if memory else 'off'}"
            rows.append({"embedder": embedder, "strategy": name, **tally.row(), "ingest s": "-"})
    return rows


def run(embedders: list[str], chroma_url: str, show_misses: bool) -> list[dict[str, str]]:
    from rag_orchestrator.providers import create_strategy
    from rag_orchestrator.retrieval.ingestion import ingest_documents

    questions = load_questions()
    rows = []
    for embedder in embedders:
        settings = settings_for(embedder, "eval", chroma_url)
        started = time.perf_counter()
        ingest_documents(corpus_documents(), settings)
        ingested = time.perf_counter() - started
        for name in strategies():
            try:
                strategy = create_strategy(settings.model_copy(update={"model_strategy": name}))
                # Powertools prints its metrics every 100 values, POWERTOOLS_METRICS_DISABLED or not.
                with contextlib.redirect_stdout(io.StringIO()):
                    tally = asyncio.run(evaluate(questions, settings, strategy))
            except Exception as exc:
                print(f"{embedder} / {name}: failed: {type(exc).__name__}: {exc}", file=sys.stderr)
                continue
            rows.append(
                {"embedder": embedder, "strategy": name, **tally.row(), "ingest s": f"{ingested:.1f}"}
            )
            if show_misses:
                print(f"\n{embedder} / {name}: wrong answers ({len(tally.misses)})")
                print("\n".join(f"  - {m}" for m in tally.misses))
    return rows


def ask_readme_question(embedder: str, chroma_url: str) -> str:
    from devserver.sample import sample_documents
    from rag_orchestrator.providers import create_strategy
    from rag_orchestrator.retrieval.ingestion import ingest_documents

    settings = settings_for(embedder, "eval-sample", chroma_url)
    ingest_documents(sample_documents(), settings)
    strategy = create_strategy(settings.model_copy(update={"model_strategy": "extractive"}))
    _, _, answer = asyncio.run(ask(README_QUESTION, settings, strategy))
    return answer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--embedders", default="", help="comma-separated (default: hashing, wordllama if installed)"
    )
    parser.add_argument("--misses", action="store_true", help="list the questions answered wrongly")
    parser.add_argument(
        "--turns", action="store_true", help="also ask as chat turns, conversation memory on and off"
    )
    args = parser.parse_args(argv)
    embedders = [e.strip() for e in args.embedders.split(",") if e.strip()] or default_embedders()
    questions = load_questions()
    answerable = sum(q.document is not None for q in questions)
    print(
        f"{answerable} questions about {len(corpus_documents())} documents (eval/corpus/SOURCES.md), "
        f"{len(questions) - answerable} off-topic"
    )

    local = ROOT / ".local" / "eval"
    shutil.rmtree(
        local / "chroma", ignore_errors=True
    )  # every run ingests afresh, whatever embedder came before
    chroma = start_chroma(f"http://127.0.0.1:{free_port()}", local / "chroma", local / "chroma.log")
    try:
        rows = run(embedders, chroma.url, args.misses)
        if args.turns:
            rows += run_turns(embedders, chroma.url)
        print()
        print(table(rows))
        for embedder in embedders:
            answer = ask_readme_question(embedder, chroma.url)
            verdict = "answers with" if README_FACT in answer else "MISSES"
            print(
                f"\nREADME question {README_QUESTION!r} on README + docs/ ({embedder}, extractive): "
                f"{verdict} `{README_FACT}`\n  {answer}"
            )
    finally:
        chroma.stop()
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
