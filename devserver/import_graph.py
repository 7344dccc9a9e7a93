"""`python -m devserver.import_graph`: which package of rag_orchestrator imports which, and the layer order.

Reads every module's imports (top-level and inside functions) with `ast`; nothing is imported. A
package is a subpackage (`api`, `loop`, …) or a module at the package root (`config`, `errors`, …).
tests/unit/test_layering.py holds the code to LAYERS: no import runs up, no two packages import
each other, and no modules of one package import each other round a loop.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

PACKAGE = "rag_orchestrator"
ROOT = Path(__file__).resolve().parent.parent / "layers" / "core" / PACKAGE

# Bottom to top; a package may import only from its own layer or the layers below it.
LAYERS: list[set[str]] = [
    {
        "domain",
        "errors",
        "event_stream",
        "observability",
        "tls",
        "http_pool",
        "aws",
        "aws_json",
        "aws_wire",
        "aws_bedrock",
        "aws_events",
        "aws_s3",
        "aws_sigv4",
        "attribute_values",
        "sanitize",
        "startup",
        "built_once",
        "ssm_params",
        "text",
        "__init__",
    },
    {"config", "tracing", "otel_tracing"},
    {"providers", "conversations", "stream_log", "retrieval"},
    {"attachments"},
    {"lifecycle"},
    {"tools"},
    {"loop"},
    {"api", "cli"},
]


def package_of(module: str) -> str:
    """`rag_orchestrator.loop.steps` -> `loop`; `rag_orchestrator.config` -> `config`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def module_name(path: Path) -> str:
    relative = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def imports(path: Path) -> set[str]:
    """The rag_orchestrator modules a file imports, anywhere in it (function bodies and
    `if TYPE_CHECKING:` blocks too): `from package import module` names the module."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith(PACKAGE)}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == PACKAGE:
            found |= {
                f"{node.module}.{alias.name}" if _is_module(f"{node.module}.{alias.name}") else node.module
                for alias in node.names
            }
    return found


def _is_module(dotted: str) -> bool:
    """Whether `rag_orchestrator.a.b` (or `a.b` under the package) is a module or a package of the tree."""
    path = ROOT.parent.joinpath(*dotted.split(".")) if dotted.startswith(PACKAGE) else ROOT / dotted
    return path.with_suffix(".py").exists() or path.is_dir()


def _runtime_imports(path: Path) -> set[str]:
    """The rag_orchestrator modules a file imports when it is itself imported: top-level statements only,
    not function bodies nor `if TYPE_CHECKING:` blocks."""
    found: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith(PACKAGE)}
        elif isinstance(node, ast.ImportFrom) and node.module == PACKAGE:
            found |= {f"{PACKAGE}.{alias.name}" for alias in node.names if _is_module(alias.name)}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PACKAGE + "."):
            found.add(node.module)
    return found


def module_cycles() -> list[list[str]]:
    """Modules that import each other, directly or around a loop, at import time."""
    return find_cycles({module_name(path): _runtime_imports(path) for path in sorted(ROOT.rglob("*.py"))})


def package_cycles() -> list[list[str]]:
    """Modules of one package that import each other, directly or around a loop, by any import: one
    deferred into a function or under `if TYPE_CHECKING:` ties the modules together all the same."""
    graph = {module_name(path): imports(path) for path in sorted(ROOT.rglob("*.py"))}
    return find_cycles(inside_packages(graph))


def inside_packages(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The edges of `graph` that stay inside one package."""
    return {
        module: {
            target for target in targets if package_of(target) == package_of(module) and target != module
        }
        for module, targets in graph.items()
    }


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The cycles a depth-first walk of `graph` meets, each as the path around it."""
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        path.append(module)
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                cycles.append(path[path.index(target) :])
            elif target in graph and target not in state:
                visit(target)
        path.pop()
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)
    return cycles


def package_graph() -> dict[str, set[str]]:
    """package -> the other packages it imports from."""
    graph: dict[str, set[str]] = defaultdict(set)
    for path in sorted(ROOT.rglob("*.py")):
        source = package_of(module_name(path))
        graph[source] |= {package_of(target) for target in imports(path)} - {source}
    return dict(graph)


def layer_of(package: str) -> int:
    for index, members in enumerate(LAYERS):
        if package in members:
            return index
    raise KeyError(f"{package} is in no layer of devserver/import_graph.py")


def upward(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted((a, b) for a, targets in graph.items() for b in targets if layer_of(b) > layer_of(a))


def mutual(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted((a, b) for a, targets in graph.items() for b in targets if a < b and a in graph.get(b, ()))


def main() -> int:
    graph = package_graph()
    for index in range(len(LAYERS) - 1, -1, -1):
        for package in sorted(LAYERS[index] & set(graph)):
            targets = ", ".join(sorted(graph[package])) or "-"
            print(f"layer {index}  {package:14} -> {targets}")
    problems = [f"upward: {a} -> {b}" for a, b in upward(graph)]
    problems += [f"cycle: {a} <-> {b}" for a, b in mutual(graph)]
    problems += ["module cycle: " + " -> ".join(cycle) for cycle in module_cycles()]
    problems += ["cycle inside a package: " + " -> ".join(cycle) for cycle in package_cycles()]
    print(
        "\n".join(problems)
        if problems
        else "no import runs up a layer; no two packages import each other; no module cycle, inside a package none"
        " either by any import"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
