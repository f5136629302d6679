"""Writing a run's report directory: index.html, junit.xml and summary.json."""

from __future__ import annotations

import json
from pathlib import Path

from contract.checked_run import load_run
from contract.errors import InputError
from contract.history import JUNIT, REPORT, RUN_JSON, SUMMARY, write_atomic
from reports.html import render_report
from reports.junit import render_junit
from reports.summary import build_summary


def write_report(run_dir: Path) -> Path:
    """Render the report of one checked run; returns the path of its index.html."""
    if not (run_dir / RUN_JSON).exists() and next(run_dir.glob(f"*/{RUN_JSON}"), None):
        hint = f"`kchaos report --index {run_dir}`"
        raise InputError(f"{run_dir}: a directory of runs, not a run directory ({hint})")
    run = load_run(run_dir)
    write_atomic(run_dir, JUNIT, render_junit(run))
    write_atomic(
        run_dir, SUMMARY, json.dumps(build_summary(run.info, run.result, run.expectations), indent=2) + "\n"
    )
    return write_atomic(run_dir, REPORT, render_report(run))
