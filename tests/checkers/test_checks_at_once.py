"""Ten `kchaos check` of one run directory started at once each report what a lone check reports,
or are refused with exit 2; none reads or leaves a half-made or doubled cache, and a later check
reports the same (issue 68: two checks at once once reported acks=all 20/20 where the history holds
10, and every later check repeated it).

Each check is a process of its own with its own JVM, as `kchaos check` is (the checks of one
process share one SparkSession and run one at a time: `checkers.session.kept_until_done`). Ten JVMs
on this 2-core machine: each is given the smallest heap a check takes (1 GiB).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from checker_rundirs import FAULT, SAMPLE, acked, all_ends, make_run, record, write
from pyspark.sql import SparkSession

from checkers.check import check_run
from checkers.session import DRIVER_MEMORY_ENV
from contract.history import CHECK_CACHE

pytestmark = pytest.mark.spark

CHECKS = 10
CHECK_TIMEOUT_S = 900


def comparable(result: dict[str, Any]) -> dict[str, Any]:
    """What two checks of one history must agree on: counts, verdicts and anomalies, not the time."""
    return {key: value for key, value in result.items() if key not in ("checked_at", "spark")}


def _small_run(root: Path) -> Path:
    """Ten acked writes on acks=all, one lost, one read twice; and a write of each other mode."""
    writes = [event for n in range(10) for event in acked(100 + 20 * n, f"p:{n}", n)]
    writes += [*acked(400, "q:1", 0, topic="t-1"), write("invoke", 500, "z:1", topic="t-0")]
    reads = [record(1000 + n, f"p:{n}", n) for n in range(10) if n != 4]
    reads += [record(1100, "p:3", 11), record(1101, "q:1", 0, topic="t-1"), *all_ends()]
    return make_run(root, writes, reads, [FAULT], [SAMPLE])


def _at_once(run_dir: Path, *flags: str) -> list[tuple[int, str, str]]:
    """CHECKS `kchaos check --json` of `run_dir` started together: (exit code, stdout, stderr) each."""
    env = {**os.environ, DRIVER_MEMORY_ENV: "1g"}
    command = [sys.executable, "-m", "kchaos.cli", "check", str(run_dir), "--json", "--master", "local[1]"]
    checks = [
        subprocess.Popen(
            [*command, *flags], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        for _ in range(CHECKS)
    ]
    try:
        outputs = [check.communicate(timeout=CHECK_TIMEOUT_S) for check in checks]
    finally:
        for check in checks:
            check.kill()
    return [(check.returncode, out, err) for check, (out, err) in zip(checks, outputs, strict=True)]


def _agree(outcomes: list[tuple[int, str, str]], lone: dict[str, Any]) -> None:
    """Every check reported `lone`'s result (exit 1: the history lost a write) or was refused in
    one line (exit 2); at least one reported."""
    reported = 0
    for code, out, err in outcomes:
        assert code in (1, 2), (code, err[-2000:])
        if code == 2:
            assert len(err.strip().splitlines()) == 1 and err.startswith("error: "), err
            continue
        assert comparable(json.loads(out)) == lone
        reported += 1
    assert reported >= 1, [err for _, _, err in outcomes]


def test_ten_checks_at_once_report_what_a_lone_check_does(spark: SparkSession, tmp_path: Path) -> None:
    lone = comparable(check_run(_small_run(tmp_path / "lone")))
    assert (lone["acks"]["all"]["acked"], lone["acks"]["all"]["lost"]) == (10, 1)  # as written above
    run_dir = _small_run(tmp_path / "run")
    _agree(_at_once(run_dir), lone)
    assert comparable(check_run(run_dir)) == lone  # a later check, from whatever cache they left
    (cache,) = (run_dir / CHECK_CACHE).iterdir()  # one cache: no doubled table, no build left over
    assert not cache.name.startswith("."), cache
