"""The layering rule of scripts/check_layers.py holds on the source, and the check can see a breach."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

_PATH = Path(__file__).resolve().parent.parent / "scripts" / "check_layers.py"
_spec = importlib.util.spec_from_file_location("check_layers", _PATH)
assert _spec is not None and _spec.loader is not None
layers = importlib.util.module_from_spec(_spec)
sys.modules["check_layers"] = layers
_spec.loader.exec_module(layers)


def test_the_source_keeps_its_layers() -> None:
    assert layers.violations() == []


def test_layers_of_modules() -> None:
    assert layers.layer_of("harness.app.cli") == "app"
    assert layers.layer_of("harness.contract.history") == "contract"
    assert layers.layer_of("harness.cluster") == "ground"
    assert layers.layer_of("harness.errors") == "base"
    assert layers.layer_of("faults.schedule") == "faults"
    assert layers.layer_of("pyspark.sql") is None
    assert layers.allowed("app", "checkers") and layers.allowed("reports", "contract")
    assert layers.allowed("faults", "ground") and layers.allowed("contract", "base")
    assert not layers.allowed("reports", "ground")  # the run-directory contract only
    assert not layers.allowed("checkers", "ground")
    assert not layers.allowed("contract", "ground")
    assert not layers.allowed("ground", "faults")
    assert not layers.allowed("reports", "checkers")
    assert not layers.allowed("faults", "app")


def test_function_level_and_relative_imports_are_seen() -> None:
    source = "from .. import errors\nfrom . import cli\nimport os\n\ndef f():\n    from checkers import io\n"
    found = [(name, top) for _, name, top in layers._imports(ast.parse(source), "harness.app")]
    assert found == [("harness", True), ("harness.app", True), ("os", True), ("checkers", False)]
