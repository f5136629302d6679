"""The layering rule of scripts/check_layers.py holds on the source, and the check can see a breach."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parent.parent / "scripts" / "check_layers.py"
_spec = importlib.util.spec_from_file_location("check_layers", _PATH)
assert _spec is not None and _spec.loader is not None
layers = importlib.util.module_from_spec(_spec)
sys.modules["check_layers"] = layers
_spec.loader.exec_module(layers)


def test_the_source_keeps_its_layers() -> None:
    assert layers.violations() == []


def test_the_floors_are_the_top_level_packages() -> None:
    root = _PATH.parent.parent
    packages = {p.parent.name for p in root.glob("*/__init__.py")}
    assert packages == set(layers.PACKAGES)


def test_imports_go_down_a_floor_or_stay_in_their_package() -> None:
    assert layers.allowed("kchaos", "checkers") and layers.allowed("reports", "contract")
    assert layers.allowed("faults", "harness") and layers.allowed("contract", "contract")
    assert not layers.allowed("reports", "harness")  # siblings on one floor: independent
    assert not layers.allowed("checkers", "reports")
    assert not layers.allowed("contract", "harness")
    assert not layers.allowed("harness", "faults")
    assert not layers.allowed("faults", "kchaos")


@pytest.mark.parametrize(
    ("path", "source", "breach"),
    [
        ("harness/up.py", "from faults import base\n", "harness.up (harness) imports faults"),
        ("checkers/side.py", "import harness.cluster\n", "checkers.side (checkers) imports harness"),
        ("contract/io/deep.py", "from ...kchaos import cli\n", "contract.io.deep (contract) imports kchaos"),
        ("faults/late.py", "def f():\n    import os\n", "import of os inside a function or class"),
        (
            "harness/lazy.py",
            "import importlib\ndef f():\n    importlib.import_module('kchaos.cli')\n",
            "harness.lazy (harness) imports kchaos.cli",
        ),
    ],
)
def test_a_breach_is_named_with_its_file_and_line(
    tmp_path: Path, path: str, source: str, breach: str
) -> None:
    module = tmp_path / path
    module.parent.mkdir(parents=True)
    module.write_text(source)
    (found,) = layers.violations(tmp_path)
    assert found.startswith(f"{path}:") and breach in found


def test_function_level_and_relative_imports_are_seen() -> None:
    source = "from .. import errors\nfrom . import cli\nimport os\n\ndef f():\n    from checkers import io\n"
    found = [(name, top) for _, name, top in layers._imports(ast.parse(source), "checkers.io")]
    assert found == [("checkers", True), ("checkers.io", True), ("os", True), ("checkers", False)]


def test_a_deferred_import_of_a_floor_below_is_allowed_where_a_module_must_start_light(
    tmp_path: Path,
) -> None:
    module = tmp_path / "kchaos" / "light.py"
    module.parent.mkdir()
    module.write_text("import importlib\ndef f():\n    return importlib.import_module('harness.cluster')\n")
    assert layers.violations(tmp_path) == []


def test_the_pytest_plugin_imports_nothing_of_kafka_chaos_until_a_fixture_is_used() -> None:
    """pytest loads it into every session of the environment: the harness, Spark, Docker and the
    reports are imported only by a test that asks for a kchaos fixture."""
    heavy = (
        "harness",
        "checkers",
        "reports",
        "faults",
        "pyspark",
        "docker",
        "testcontainers",
        "confluent_kafka",
    )
    tops = "{m.split('.')[0] for m in sys.modules}"
    code = f"import sys, kchaos.pytest_plugin; print(sorted({tops} & {set(heavy)}))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"
