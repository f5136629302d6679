"""The layering rule, checked on the source: `make lint` runs it, and so does the test suite.

    harness.app             top floor: CLI, runner, scenarios, pytest plugin, consoles
    faults                  faults, on the harness's cluster
    checkers | reports      independent of each other and of faults; of the harness, they read the
                            run-directory contract only
    harness                 ground floor: cluster, services, workload, experiment
    harness.contract        the run-directory contract: names, events, readers, kinds, guarantees
    harness.errors, .limits, .userdirs   the base: errors, input limits, the user's directories

A module may import only from its own layer and the layers below it, and only at module level: an
import inside a function is how a cycle hides, so there is none (pyspark loads at import like the
rest; it costs ~0.1 s).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("harness", "faults", "checkers", "reports")
MIDDLE = ("faults", "checkers", "reports")


BASE = ("harness.errors", "harness.limits", "harness.userdirs")


def layer_of(module: str) -> str | None:
    """`app`, `faults`, `checkers`, `reports`, `ground`, `contract` or `base` for our modules; None
    for anything else."""
    top = module.split(".")[0]
    if top not in PACKAGES:
        return None
    for layer, package in (("app", "harness.app"), ("contract", "harness.contract")):
        if module == package or module.startswith(f"{package}."):
            return layer
    if module in BASE:
        return "base"
    return "ground" if top == "harness" else top


def allowed(importer: str, imported: str) -> bool:
    """Whether a module of layer `importer` may import one of layer `imported`."""
    if importer in (imported, "app") or imported == "base":
        return True
    if imported == "contract":
        return importer != "base"
    # the rest of the harness: for itself and the faults; checkers and reports read the contract only
    return imported == "ground" and importer in ("ground", "faults")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(tree: ast.Module, package: str) -> Iterator[tuple[ast.stmt, str, bool]]:
    """(statement, imported module, at module level) for every import in `tree`."""

    def visit(node: ast.AST, in_function: bool) -> Iterator[tuple[ast.stmt, str, bool]]:
        if isinstance(node, ast.Import):
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


def violations() -> list[str]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            module = _module_name(path)
            importer = layer_of(module)
            assert importer is not None
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            own_package = module if path.name == "__init__.py" else module.rpartition(".")[0]
            for node, imported, module_level in _imports(tree, own_package):
                where = f"{path.relative_to(ROOT)}:{node.lineno}"
                layer = layer_of(imported)
                if not module_level:
                    found.append(f"{where}: import of {imported} inside a function or class")
                elif layer is not None and not allowed(importer, layer):
                    found.append(f"{where}: {module} ({importer}) imports {imported} ({layer})")
    return found


def main() -> int:
    problems = violations()
    for problem in problems:
        print(problem)
    print(f"layers: {len(problems)} violation(s)" if problems else "layers: ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
