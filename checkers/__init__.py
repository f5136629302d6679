"""The judge: checks a run directory's history on Spark and writes check/result.json.

    from checkers import check_run
    result = check_run(Path("runs/20261121-142233-leader-kill"))       # local[*]
    result = check_run(run_dir, master="spark://spark-master:7077")    # a real Spark cluster

Names are imported lazily so that `kchaos` commands that do not check never load pyspark.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from checkers.check import check_run
    from checkers.guarantees import derive_guarantees
    from checkers.result import EXAMPLE_CAP, RESULT_FORMAT
    from checkers.session import get_spark

_EXPORTS = {
    "check_run": "checkers.check",
    "derive_guarantees": "checkers.guarantees",
    "EXAMPLE_CAP": "checkers.result",
    "RESULT_FORMAT": "checkers.result",
    "get_spark": "checkers.session",
}

__all__ = ["EXAMPLE_CAP", "RESULT_FORMAT", "check_run", "derive_guarantees", "get_spark"]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'checkers' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
