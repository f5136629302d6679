"""check/expectations.json: how each scenario expectation was judged (docs/HISTORY_FORMAT.md).

Written by `kchaos run` (`kchaos.expectations` judges them), read by the reports (JUnit, the
summary, the page) and by `kchaos replay`/`shrink` (what a run broke).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contract.history import EXPECTATIONS, write_atomic
from contract.history_fields import Fields
from contract.strictjson import read_file

HELD, FAILED, UNKNOWN = "held", "failed", "unknown"
VERDICTS = (HELD, FAILED, UNKNOWN)
MAX_TEXT = 1000  # characters of an expectation's text or reason


@dataclass(frozen=True)
class ExpectationOutcome:
    """One expectation judged."""

    text: str
    verdict: str
    observed: Any
    """The count, flag or milliseconds the result held (None when it held none)."""
    why: str | None = None
    """Why the verdict is `unknown`, or what qualifies the observed value (nothing observed, or only a
    lower bound); None otherwise."""

    @property
    def held(self) -> bool:
        return self.verdict == HELD

    def as_json(self) -> dict[str, Any]:
        """`held` too: readers from before `verdict` existed read it."""
        return {
            "text": self.text,
            "held": self.held,
            "verdict": self.verdict,
            "observed": self.observed,
            "why": self.why,
        }


def write_expectations(root: Path, outcomes: list[ExpectationOutcome]) -> None:
    write_atomic(root, EXPECTATIONS, json.dumps([e.as_json() for e in outcomes], indent=2) + "\n")


def read_expectations(root: Path) -> list[ExpectationOutcome]:
    """The run's judged expectations ([] when it has none: `kchaos workload` runs, older runs).
    A file that is not what `write_expectations` writes is a HistoryError naming the field."""
    path = root / EXPECTATIONS
    if not path.is_file():
        return []
    value = read_file(path)
    if not isinstance(value, list):
        raise Fields({}, path).fail("", "a list of judged expectations", value)
    outcomes = []
    for i, item in enumerate(value):
        entry = Fields(item, path, f"[{i}]")
        held = entry.flag("held", required=True)
        verdict = entry.text("verdict") or (HELD if held else FAILED)
        if verdict not in VERDICTS:
            raise entry.fail("verdict", f"one of {', '.join(VERDICTS)}", verdict)
        observed = entry.obj.get("observed")
        # a count, a flag (bool is an int) or milliseconds (heal_recovery_ms)
        if observed is not None and (not isinstance(observed, int | float) or not math.isfinite(observed)):
            raise entry.fail("observed", "a number, true, false or null", observed)
        text = entry.text("text", required=True, longest=MAX_TEXT) or ""
        outcomes.append(ExpectationOutcome(text, verdict, observed, entry.text("why", longest=MAX_TEXT)))
    return outcomes
