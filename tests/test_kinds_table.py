"""No list of kinds or guarantees drifts from the tables of `contract.anomaly_kinds`: every place that
lists kinds or guarantees (checkers, verdicts, reports, the CLI's summary, the docs, the test and
benchmark fixtures) holds every row and nothing else, and each verdict counts its kinds' rows."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from checkers import kind_checkers  # noqa: F401  (registers the topic kinds' checkers)
from checkers.group_guarantees import group_guarantees
from checkers.guarantees import derive_guarantees
from checkers.registry import registered
from contract.anomaly_kinds import (
    ALL_KINDS,
    ANOMALY_COUNTS,
    GROUP_COUNTS,
    GROUP_KINDS,
    GUARANTEE_BY_ID,
    GUARANTEES,
    KIND_IDS,
    KINDS,
    RATE_BASE,
    kinds_of,
    trend_metrics,
)
from reports import explain, html, index

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "reports"))
sys.path.insert(0, str(ROOT / "tests" / "checkers"))
from checker_rundirs import GROUP, run_json  # noqa: E402
from report_runs import make_failing  # noqa: E402


def test_every_kind_bears_on_a_guarantee_of_its_family_and_every_guarantee_has_kinds() -> None:
    for kind in ALL_KINDS:
        assert GUARANTEE_BY_ID[kind.guarantee].family == kind.family, kind.id
        assert kind.evidence and kind.title and kind.explanation and kind.count_help, kind.id
    assert {kind.guarantee for kind in ALL_KINDS} == set(GUARANTEE_BY_ID)
    assert len({kind.id for kind in ALL_KINDS}) == len(ALL_KINDS)
    assert len({kind.count for kind in ALL_KINDS}) == len(ALL_KINDS)


def test_one_checker_is_registered_for_every_kind_of_either_family() -> None:
    assert [checker.kind.id for checker in registered()] == [kind.id for kind in ALL_KINDS]
    assert [checker.kind.id for checker in registered("topic")] == list(KIND_IDS)
    assert [checker.kind.id for checker in registered("group")] == [kind.id for kind in GROUP_KINDS]
    assert ("polled", *(kind.count for kind in GROUP_KINDS)) == GROUP_COUNTS


def _topic_counts(**violations: int) -> dict[str, Any]:
    counts: dict[str, Any] = {count: 0 for count in ("attempted", "acked", "failed", "indeterminate")}
    counts |= {kind.count: 0 for kind in KINDS}
    return (
        counts
        | {"unread": [], "replicas_read": True, "replicas_not_read": "", "disks_failed": True}
        | violations
    )


def test_topic_verdicts_are_the_guarantee_rows_and_count_their_kinds() -> None:
    plain = {"name": "t", "partitions": 1, "replication_factor": 3, "acks": "all"}
    transactional = plain | {
        "name": "x",
        "transactions": {"records": [1, 2], "abort_rate": 0.1},
        "pipeline": {"group": "pipe", "inputs": ["t"]},
    }
    run = run_json(
        kafka={"version": "3.9.2"}, topics=[plain, transactional], producer={"enable.idempotence": "true"}
    )
    run["cluster"]["broker_config"]["flush.messages"] = "1"
    clean = derive_guarantees(run, {"t": _topic_counts(), "x": _topic_counts()})
    assert {row["id"] for row in clean} == {g.id for g in GUARANTEES if g.family == "topic"}
    for row in clean:
        assert row["promise"] == GUARANTEE_BY_ID[row["id"]].promise
        assert row["promised"], row["id"]  # every one is promised on one of the two topics
    for kind in KINDS:  # one of each kind breaks its own guarantee, and only it
        counts = _topic_counts(**{kind.count: 1})
        rows = derive_guarantees(run, {"t": counts, "x": counts})
        broken = {row["id"] for row in rows if row["verdict"] == "violated"}
        assert broken == {kind.guarantee}, kind.id


def test_group_verdicts_are_the_guarantee_rows_and_count_their_kinds() -> None:
    # A read_committed group of a transactional topic: every group guarantee has a row.
    topic = {"name": "t-all", "partitions": 2, "replication_factor": 3, "acks": "all"}
    run = run_json(
        kafka={"version": "3.9.2"},
        topics=[topic | {"transactions": {"records": [1, 2], "abort_rate": 0.1}}],
        groups=[GROUP],
    )
    group = GROUP | {"config": {"isolation.level": "read_committed"}}
    clean = {"polled": 10, **{kind.count: 0 for kind in GROUP_KINDS}}
    for commit in ("after-process", "before-process", "auto"):
        rows = group_guarantees(run, group | {"commit": commit}, clean)
        assert {row["id"] for row in rows} == {g.id for g in GUARANTEES if g.family == "group"}
        for row in rows:
            assert row["promise"] == GUARANTEE_BY_ID[row["id"]].promise
    rows = group_guarantees(run, group | {"commit": "before-process"}, clean)
    promised = {row["id"] for row in rows if row["promised"]}
    for kind in GROUP_KINDS:
        if kind.guarantee in promised:
            counts = clean | {kind.count: 1}
            rows = group_guarantees(run, group | {"commit": "before-process"}, counts)
            assert {row["id"] for row in rows if row["verdict"] == "violated"} == {kind.guarantee}
    assert "no-uncommitted-reads" in promised
    # Without transactions the group has nothing uncommitted to be judged on.
    plain = group_guarantees(run_json(groups=[GROUP]), GROUP, clean)
    assert "no-uncommitted-reads" not in {row["id"] for row in plain}


def test_reports_and_summaries_derive_from_the_rows() -> None:
    assert set(explain.GUARANTEES) == set(GUARANTEE_BY_ID)
    assert {count for count, base in RATE_BASE.items() if count in ANOMALY_COUNTS} == {
        kind.count for kind in KINDS if kind.rate_base is not None
    }
    assert html.RATE_BASE is RATE_BASE
    assert (
        trend_metrics("topic") == index.TREND_METRICS and trend_metrics("group") == index.GROUP_TREND_METRICS
    )
    for kind in ALL_KINDS:
        assert explain.anomaly_title(kind.id) == kind.title
    assert [g for g in GUARANTEES if not kinds_of(g.id)] == []


def test_the_report_fixtures_hold_every_kind(tmp_path: Path) -> None:
    result = json.loads((make_failing(tmp_path / "failing") / "check/result.json").read_text())
    assert set(result["anomalies"]) == set(KIND_IDS)


@pytest.mark.parametrize("doc", ["docs/HISTORY_FORMAT.md", "docs/RESULT_FORMAT.md"])
def test_the_contract_names_every_kind_and_guarantee(doc: str) -> None:
    text = (ROOT / doc).read_text()
    named = set(re.findall(r"`([a-z][a-z0-9-]*)`", text))
    wanted = {kind.id for kind in ALL_KINDS} if doc.endswith("HISTORY_FORMAT.md") else set(GUARANTEE_BY_ID)
    assert wanted - named == set(), f"{doc} does not name {sorted(wanted - named)}"


def _markdown_table(text: str, header: str) -> list[list[str]]:
    """The rows of the markdown table whose header line starts with `header`, as cells."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split(" | ")])
    return rows


def test_the_reports_tables_are_the_kinds_table_row_for_row() -> None:
    text = (ROOT / "docs/REPORT.md").read_text()
    guarantees = _markdown_table(text, "| guarantee |")
    assert [row[0] for row in guarantees] == [f"`{g.id}`" for g in GUARANTEES]
    for (_, family, promise, decided), guarantee in zip(guarantees, GUARANTEES, strict=True):
        assert (family, promise) == (guarantee.family, guarantee.promise), guarantee.id
        assert decided == ", ".join(f"`{k.id}` (`{k.count}`)" for k in kinds_of(guarantee.id)), guarantee.id
    kinds = _markdown_table(text, "| kind |")
    assert [row[0] for row in kinds] == [f"`{kind.id}`" for kind in ALL_KINDS]
    for (_, count, says), kind in zip(kinds, ALL_KINDS, strict=True):
        assert count == f"`{kind.count}`" and says.startswith(kind.count_help), kind.id


@pytest.mark.parametrize("doc", ["docs/REPORT.md", "docs/SCENARIOS.md", "docs/ARCHITECTURE.md", "README.md"])
def test_no_doc_names_a_kind_or_guarantee_the_table_lacks(doc: str) -> None:
    """A kind or guarantee renamed or removed leaves no stale name behind: every backticked name of
    a kind's or guarantee's shape in these docs is in the table (or one of the few other names of
    that shape they use)."""
    text = (ROOT / doc).read_text()
    shaped = set(
        re.findall(r"`((?:no|per|replicas|epochs|committed|exactly|atomic|monotonic|commits)-[a-z-]+)`", text)
    )
    known = set(GUARANTEE_BY_ID) | {kind.id for kind in ALL_KINDS}
    assert shaped - known == set(), f"{doc} names {sorted(shaped - known)}"
