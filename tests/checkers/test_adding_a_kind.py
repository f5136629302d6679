"""Adding an anomaly kind is its row in the table and its checker, and nothing else: a copy of the
code gains a topic kind and a group kind, each a row of `contract/anomaly_kinds.py` and a class of
`checkers/kind_checkers.py`, exactly as docs/ARCHITECTURE.md says to add one, and `kchaos check`
and `kchaos report` of the copy carry both into result.json, the report and JUnit."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from group_history import CONSUMES_G, CONSUMES_H, group_run

from contract.history import RESULT

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("contract", "harness", "checkers", "reports", "faults", "kchaos")

TOPIC_KIND = """
    AnomalyKind(
        "dummy-write",
        "dummies",
        "Dummy write",
        "An acknowledged write whose value ends in ':1': a kind a test added to a copy of the table.",
        "acknowledged writes whose value ends in :1",
        "no-unexpected-values",
        "dummy writes",
        rate_base="acked",
    ),"""
GROUP_KIND = """
    AnomalyKind(
        "dummy-poll",
        "dummy_polls",
        "Dummy poll",
        "A poll of offset 0: a group kind a test added to a copy of the table.",
        "polls of offset 0",
        "monotonic-polls",
        "polls of offset 0",
        family="group",
        complete_reads_only=True,
        per_acks=False,
    ),"""
CHECKERS = """

@register
class DummyWrites(_Always, _NoDetails):
    kind = kind("dummy-write")

    def find(self, inputs: CheckInputs) -> DataFrame:
        ok = (F.col("outcome") == "ok") & F.col("value").endswith(":1")
        return inputs.history.writes.where(ok).select("topic", "partition", "value", "complete_ns")


@register
class DummyPolls(_OfGroups):
    kind = kind("dummy-poll")
    time_column = "time_ns"

    def rows(self, groups: GroupInputs, history: History) -> DataFrame:
        return groups.polled.where(F.col("offset") == 0).select("group", "topic", "partition", "time_ns")
"""


def _with_row(source: str, table_end: str, row: str) -> str:
    """`source` with `row` added as the last row of the table tuple that `table_end` closes."""
    assert source.count(table_end) == 1, table_end
    return source.replace(table_end, row + table_end)


def _copy_with_new_kinds(into: Path) -> Path:
    for package in PACKAGES:
        shutil.copytree(ROOT / package, into / package, ignore=shutil.ignore_patterns("__pycache__"))
    table = into / "contract" / "anomaly_kinds.py"
    source = _with_row(table.read_text(), "\n)\n\nBY_ID = ", TOPIC_KIND)
    table.write_text(_with_row(source, "\n)\nGROUP_BY_ID = ", GROUP_KIND))
    checkers = into / "checkers" / "kind_checkers.py"
    checkers.write_text(checkers.read_text() + CHECKERS)
    return into


def _kchaos(code: Path, *args: str) -> subprocess.CompletedProcess[str]:
    main = "import sys; from kchaos.cli import main; sys.exit(main(sys.argv[1:]))"
    env = {**os.environ, "PYTHONPATH": str(code)}
    return subprocess.run(
        [sys.executable, "-c", main, *args], env=env, cwd=code, capture_output=True, text=True, timeout=600
    )


def test_a_new_topic_kind_and_group_kind_reach_result_report_and_junit(tmp_path: Path) -> None:
    code = _copy_with_new_kinds(tmp_path / "code")
    run_dir = group_run(tmp_path / "run", [*CONSUMES_G, *CONSUMES_H])
    checked = _kchaos(code, "check", str(run_dir))
    assert checked.returncode == 1, checked.stdout + checked.stderr  # the new kinds break their promises
    result = json.loads((run_dir / RESULT).read_text())
    assert result["anomalies"]["dummy-write"]["count"] == 1  # p:1
    assert [e["value"] for e in result["anomalies"]["dummy-write"]["examples"]] == ["p:1"]
    topics = {row["topic"]: row for row in result["topics"]}
    assert (topics["t-all"]["dummies"], result["acks"]["all"]["dummies"]) == (1, 1)
    verdicts = {(g["topic"], g["id"]): g["verdict"] for g in result["guarantees"]}
    assert verdicts[("t-all", "no-unexpected-values")] == "violated"  # its new kind broke it
    # the group kind: polls of offset 0 on t-all/0 (the only partition read to its end)
    g, h = result["groups"]["g"], result["groups"]["h"]
    assert (g["dummy_polls"], h["dummy_polls"]) == (2, 1)
    assert len(g["anomalies"]["dummy-poll"]["examples"]) == 2
    assert {row["id"]: row["verdict"] for row in h["guarantees"]}["monotonic-polls"] == "violated"
    reported = _kchaos(code, "report", str(run_dir))
    assert reported.returncode == 0, reported.stdout + reported.stderr
    page = (run_dir / "report" / "index.html").read_text()
    assert "Dummy write" in page and "Dummy poll" in page
    cases = {case.get("name"): case for case in ET.parse(run_dir / "report" / "junit.xml").iter("testcase")}
    for name, evidence in (
        ("no-unexpected-values[t-all]", "1 dummy-write"),
        ("monotonic-polls[h]", "1 dummy-poll"),
    ):
        failure = cases[name].find("failure")
        assert failure is not None and evidence in (failure.text or ""), name
