"""The layering rule, checked on the source: `make lint` runs it, and so does the test suite.

The floors, bottom first (docs/ARCHITECTURE.md). A module may import from its own package and from
the packages of the floors below; packages that share a floor are independent of each other:

    contract                      the run-directory contract, and the base: errors, input limits,
                                  the user's directories
    harness | checkers | reports  the cluster and the workload | the judge | what people look at
    faults                        faults on the harness's cluster
    kchaos                        the app: CLI, scenarios, runner, replay and shrink, pytest plugin

Imports are at module level only: an import inside a function is how a cycle hides, so there is
none (pyspark loads at import like the rest; it costs ~0.1 s). A module that must start light (the
pytest plugin, which pytest loads into every session of the environment) defers what it needs with
`importlib.import_module("a.literal.name")`: such a deferred import is held to the floors like any.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FLOORS: tuple[tuple[str, ...], ...] = (
    ("contract",),
    ("harness", "checkers", "reports"),
    ("faults",),
    ("kchaos",),
)
PACKAGES = tuple(package for floor in FLOORS for package in floor)


def floor_of(package: str) -> int | None:
    """The floor of one of our packages (0 at the bottom); None for anything else."""
    return next((n for n, floor in enumerate(FLOORS) if package in floor), None)


def allowed(importer: str, imported: str) -> bool:
    """Whether a module of package `importer` may import one of package `imported`."""
    low, high = floor_of(imported), floor_of(importer)
    assert low is not None and high is not None
    return importer == imported or low < high


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _deferred(node: ast.AST) -> bool:
    """An `importlib.import_module("a.literal.name")` call."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "import_module"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "importlib"
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    )


def _imports(tree: ast.Module, package: str) -> Iterator[tuple[ast.stmt | ast.expr, str, bool]]:
    """(statement or call, imported module, at module level or deferred on purpose) for every import
    in `tree`."""

    def visit(node: ast.AST, in_function: bool) -> Iterator[tuple[ast.stmt | ast.expr, str, bool]]:
        if _deferred(node):
            assert isinstance(node, ast.Call) and isinstance(node.args[0], ast.Constant)
            yield node, str(node.args[0].value), True  # deferred on purpose: its floor still counts
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node, alias.name, not in_function
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against the importing package
                parts = package.split(".")
                base = ".".join([*parts[: len(parts) - node.level + 1], base])
            yield node, base.strip("."), not in_function
        inside = in_function or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        for child in ast.iter_child_nodes(node):
            yield from visit(child, inside)

    yield from visit(tree, False)


def violations(root: Path = ROOT) -> list[str]:
    """Every breach of the rule in the packages under `root`, as `file:line: what`."""
    found = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            module = _module_name(path, root)
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            own_package = module if path.name == "__init__.py" else module.rpartition(".")[0]
            for node, imported, module_level in _imports(tree, own_package):
                where = f"{path.relative_to(root)}:{node.lineno}"
                top = imported.split(".")[0]
                if not module_level:
                    found.append(f"{where}: import of {imported} inside a function or class")
                elif top in PACKAGES and not allowed(package, top):
                    found.append(
                        f"{where}: {module} ({package}) imports {imported} ({top}): not a floor below"
                    )
    return found


def main() -> int:
    problems = violations()
    for problem in problems:
        print(problem)
    print(f"layers: {len(problems)} violation(s)" if problems else "layers: ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
