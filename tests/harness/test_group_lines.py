"""The terminal output of `kchaos check` and `kchaos run` on a handmade result.json: consumer groups,
recoveries after heals, the verdict line (pure Python)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from contract.anomaly_kinds import ANOMALY_COUNTS
from contract.history import RunDir
from kchaos import run_cli
from kchaos.check_cli import _summary
from kchaos.group_lines import group_lines
from kchaos.progress import phase_times
from kchaos.runner import RunOutcome

GROUP = {
    "commit": "before-process",
    "members": 2,
    "polled": 900,
    "skipped": 4,
    "redelivered": 0,
    "poll_skips": 0,
    "nonmonotonic": 0,
    "commit_regressions": 1,
    "commits": {"invoke": 12, "ok": 10, "fail": 1, "info": 1},
    "guarantees": [
        {"id": "no-redeliveries", "promise": "p", "promised": True, "verdict": "held", "reason": "r1"},
        {"id": "commits-advance", "promise": "p", "promised": True, "verdict": "violated", "reason": "r2"},
    ],
}
WRITES = {"attempted": 5, "acked": 5, "failed": 0, "indeterminate": 0, **dict.fromkeys(ANOMALY_COUNTS, 0)}


def a_result() -> dict[str, Any]:
    return {
        "run_id": "r",
        "valid": False,
        "complete": True,
        "events": {"writes": 10, "reads": 5},
        "spark": {"seconds": 1.0},
        "acks": {"0": {**WRITES, "attempted": 0}, "all": WRITES},
        "errors": [],
        "unexpected": 0,
        "guarantees": [
            {"id": "no-lost-acked-writes", "topic": "t-all", "acks": "all", "promise": "p", "promised": True}
            | {"verdict": "held", "reason": "r0"}
        ],
        "topics": [{"topic": "t-all", "acked": 5}],
        "groups": {"g-amo": GROUP},
    }


def test_a_group_s_counts_and_commits_in_one_line() -> None:
    assert group_lines(a_result()) == [
        "group g-amo (before-process, 2 members): polled 900, skipped 4, redelivered 0, poll_skips 0, "
        "nonmonotonic 0, commit_regressions 1; commits 12 sent: 10 ok, 1 failed, 1 unknown"
    ]
    assert group_lines({"groups": {}}) == []


@pytest.mark.parametrize(
    ("recovery", "said"),
    [
        (
            {"heal_recovery_ms": 4520.4, "heal_recovery_lower_bound": False},
            "; every partition was read again within 4520 ms of each heal",
        ),
        (
            {"heal_recovery_ms": 9000.7, "heal_recovery_lower_bound": True},  # floored: 9000 or more
            "; every partition was read again within 9000 ms or more of each heal (after one, a partition "
            "was not read again by the workload's end or the next fault)",
        ),
        ({"heal_recovery_ms": None, "heal_recovery_lower_bound": False}, ""),
    ],
)
def test_a_group_s_line_says_how_soon_it_read_again_after_heals(recovery: dict[str, Any], said: str) -> None:
    result = a_result()
    result["groups"]["g-amo"] = {**GROUP, **recovery}
    assert group_lines(result) == [group_lines(a_result())[0] + said]


def test_kchaos_check_prints_each_group_and_its_broken_promises(tmp_path: Path) -> None:
    lines = _summary(a_result(), tmp_path).splitlines()
    assert lines[2:5] == [
        f"  {group_lines(a_result())[0]}",
        "  VIOLATED: group g-amo commits-advance (r2)",
        f"  result: {tmp_path / 'check/result.json'}",
    ]
    assert not any(line.startswith("  acks=0") for line in lines)


def test_kchaos_run_shows_the_group_s_guarantees_and_counts_but_no_unused_acks_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcome = RunOutcome("s", RunDir(tmp_path), a_result(), [], None, False, {})
    monkeypatch.setattr(run_cli, "console", Console(width=400, highlight=False, markup=False))
    with run_cli.console.capture() as captured:
        run_cli._print_outcome(outcome)
    text = captured.get()
    rows = [line for line in text.splitlines() if "group g-amo" in line and "│" in line]
    assert len(rows) == 2 and "violated" in rows[1] and "r2" in rows[1]
    assert "  acks=all: attempted 5" in text and "acks=0:" not in text
    assert f"  {group_lines(a_result())[0]}" in text


def test_kchaos_check_and_run_say_how_soon_each_acks_mode_took_writes_again_after_heals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = a_result()
    result["acks"]["all"] = {**WRITES, "heal_recovery_ms": 25244.0, "heal_recovery_lower_bound": True}
    said = (
        "; every partition took writes again within 25244 ms or more of each heal (after one, a "
        "partition took no write again by the writes' end or the next fault)"
    )
    (checked,) = [line for line in _summary(result, tmp_path).splitlines() if line.startswith("  acks=all")]
    assert checked.endswith(said)
    monkeypatch.setattr(run_cli, "console", Console(width=400, highlight=False, markup=False))
    with run_cli.console.capture() as captured:
        run_cli._print_outcome(RunOutcome("s", RunDir(tmp_path), result, [], None, False, {}))
    (ran,) = [line for line in captured.get().splitlines() if line.startswith("  acks=all")]
    assert ran.endswith(said)
    plain = next(
        line for line in _summary(a_result(), tmp_path).splitlines() if line.startswith("  acks=all")
    )
    assert "heal" not in plain  # none judged: nothing said


def test_kchaos_run_s_verdict_line_says_how_long_each_phase_and_the_check_took(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    phases = {"setup": 5.222, "chaos": 40.344, "final_read": 1.599}
    monkeypatch.setattr(run_cli, "console", Console(width=400, highlight=False, markup=False))
    with run_cli.console.capture() as captured:
        run_cli._print_outcome(RunOutcome("s", RunDir(tmp_path), a_result(), [], None, False, phases))
    (verdict,) = [line for line in captured.get().splitlines() if line.startswith(("PASS", "FAIL"))]
    assert verdict == "FAIL  setup 5.2 s, chaos 40.3 s, final read 1.6 s, check 1.0 s"
    assert phase_times({}) == ""
