"""CI outputs: junit.xml against the JUnit schema, summary.json, the CLI, and the index page."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import typer
import xmlschema
from report_runs import TRANSACTIONS, S, make_failing, make_passing, make_plain_run, make_transaction_run
from reportpage import Page, parse
from typer.testing import CliRunner

from contract.anomaly_kinds import COUNT_KEYS, GROUP_COUNTS, TOPIC_CASES
from contract.expectation_outcomes import ExpectationOutcome, write_expectations
from kchaos.cli import main
from kchaos.report_cli import register
from reports import write_index, write_report

SCHEMA = xmlschema.XMLSchema(Path(__file__).with_name("junit.xsd"))


def junit(run_dir: Path) -> ET.Element:
    write_report(run_dir)
    path = run_dir / "report/junit.xml"
    SCHEMA.validate(str(path))
    return ET.parse(path).getroot()


def test_junit_fails_exactly_the_violated_guarantees(failing_run: Path) -> None:
    root = junit(failing_run)
    result = json.loads((failing_run / "check/result.json").read_text())
    cases = root.findall("testsuite/testcase")
    assert len(cases) == len(result["guarantees"]) + len(result["groups"]["g-alo"]["guarantees"])
    failed = {c.get("name") for c in cases if c.find("failure") is not None}
    assert failed == {"no-phantom-writes[chaos-acks-1]", "no-unexpected-values", "no-consumer-skips[g-alo]"}
    assert {c.get("name") for c in cases if c.find("skipped") is not None} == {
        "no-lost-acked-writes[chaos-acks-all]"
    }
    assert all(c.find("error") is None for c in cases)
    suite = root.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == (
        "6",
        "3",
        "0",
        "1",
    )
    phantom = next(c for c in cases if c.get("name") == "no-phantom-writes[chaos-acks-1]").find("failure")
    assert phantom is not None and phantom.text is not None
    assert phantom.get("message") == "1 failed write was read"
    assert '"value": "p-1-0:3"' in phantom.text  # the checker's example is the evidence
    skips = next(c for c in cases if c.get("name") == "no-consumer-skips[g-alo]")
    assert skips.get("classname") == "kchaos.leader-kill.group-g-alo"
    skipped = skips.find("failure")
    assert skipped is not None and skipped.text is not None and '"committed_by": "g-alo-1"' in skipped.text


def test_junit_of_a_passing_run_has_no_failures(passing_run: Path) -> None:
    root = junit(passing_run)
    assert root.get("failures") == "0" and root.get("errors") == "0"
    assert root.find("testsuite") is not None


def test_junit_promised_but_unknown_is_an_error(passing_run: Path) -> None:
    path = passing_run / "check/result.json"
    result = json.loads(path.read_text())
    result["guarantees"][0]["verdict"] = "unknown"
    result.update(
        valid=False,
        complete=False,
        incomplete_partitions=[
            {"topic": "chaos-acks-all", "partition": 1, "why": "nothing was read of [0, 9)"}
        ],
    )
    path.write_text(json.dumps(result))
    root = junit(passing_run)
    errors = [c.get("name") for c in root.iter("testcase") if c.find("error") is not None]
    assert errors == ["no-lost-acked-writes[chaos-acks-all]"]
    page = parse((passing_run / "report/index.html").read_text())
    (completeness,) = page.find(id="completeness")
    assert completeness.attrs["data-complete"] == "false"
    assert "chaos-acks-all/1 (nothing was read of [0, 9))" in " ".join("".join(completeness.text).split())


def test_scenario_expectations_are_test_cases_and_decide_pass(passing_run: Path) -> None:
    held = ExpectationOutcome("acks=all lost == 0", "held", 0)
    failed = ExpectationOutcome("acks=1 lost > 0", "failed", 0)
    unknown = ExpectationOutcome("acks=0 lost == 0", "unknown", 0, "the final read of chaos-acks-0 ...")
    write_expectations(passing_run, [held, failed, unknown])
    root = junit(passing_run)
    cases = {c.get("name"): c for c in root.iter("testcase") if c.get("classname", "").endswith(".expect")}
    assert list(cases) == [
        "expect[acks=all lost == 0]",
        "expect[acks=1 lost > 0]",
        "expect[acks=0 lost == 0]",
    ]
    assert [len(c) for c in cases.values()] == [0, 1, 1]  # held: no failure, error or skip
    failure, error = cases["expect[acks=1 lost > 0]"][0], cases["expect[acks=0 lost == 0]"][0]
    assert (failure.tag, failure.get("message")) == ("failure", "observed 0")
    assert (error.tag, error.get("message")) == ("error", unknown.why)
    summary = json.loads((passing_run / "report/summary.json").read_text())
    assert (summary["valid"], summary["passed"]) == (True, False)
    assert [e["verdict"] for e in summary["expectations"]] == ["held", "failed", "unknown"]
    page = parse((passing_run / "report/index.html").read_text())
    (banner,) = page.find(id="verdict")
    assert (banner.attrs["data-valid"], banner.attrs["data-passed"]) == ("true", "false")
    assert [li.attrs["data-verdict"] for li in page.find("li") if li.attrs.get("data-verdict")] == [
        "failed",  # the report shows what did not hold first
        "unknown",
        "held",
    ]
    write_expectations(passing_run, [held])
    write_report(passing_run)
    assert (
        parse((passing_run / "report/index.html").read_text()).find(id="verdict")[0].attrs["data-passed"]
        == "true"
    )


def test_summary_json(failing_run: Path) -> None:
    write_report(failing_run)
    summary = json.loads((failing_run / "report/summary.json").read_text())
    result = json.loads((failing_run / "check/result.json").read_text())
    assert summary["valid"] is False and summary["complete"] is True
    # the group's broken promise too: `valid` is false for it as much as for a topic's
    assert summary["violated"] == ["no-consumer-skips", "no-phantom-writes", "no-unexpected-values"]
    group = result["groups"]["g-alo"]
    assert summary["groups"] == {
        "g-alo": {
            "commit": "after-process",
            **{k: group.get(k, 0) for k in GROUP_COUNTS},  # a count newer than the result: 0
            "commits": group["commits"],
            "violated": ["no-consumer-skips"],
            "guarantees": [
                {**{k: v for k, v in g.items() if k != "promise"}, "exercised": g.get("exercised")}
                for g in group["guarantees"]
            ],
            "heal_recovery_ms": None,  # checked before groups' heals were measured
            "heal_recovery_lower_bound": False,
        }
    }
    keys = (*COUNT_KEYS, *TOPIC_CASES)
    assert summary["acks"] == {mode: {k: c.get(k, 0) for k in keys} for mode, c in result["acks"].items()}
    assert summary["anomalies"] == {k: a["count"] for k, a in result["anomalies"].items()}
    assert summary["p99_ack_latency_ms"] == {"all": 41.0, "1": 41.0, "0": 41.0}
    assert summary["heal_recovery_ms"] == summary["heal_recovery_lower_bound"] == {}  # measured before heals
    assert (summary["scenario"], summary["seed"], summary["kafka_version"]) == ("leader-kill", 7, "0.9.0.1")
    assert summary["transactions"] is None  # a run without transactional producers


def test_summary_json_counts_each_transactional_ids_transactions(transactional_run: Path) -> None:
    write_report(transactional_run)
    summary = json.loads((transactional_run / "report/summary.json").read_text())
    assert summary["transactions"] == {
        row["transactional_id"]: {k: v for k, v in row.items() if k != "transactional_id"}
        for row in TRANSACTIONS
    }
    assert {"committed-transactions-durable", "no-aborted-reads", "atomic-transactions"} <= {
        g["id"] for g in summary["guarantees"]
    }


def cli() -> typer.Typer:
    app = typer.Typer()
    register(app)

    @app.callback()
    def main() -> None:
        """Keep `report` a sub-command, as in kchaos."""

    return app


def test_cli_report_and_index(tmp_path: Path) -> None:
    run = make_passing(tmp_path / "runs/20261120-020000-leader-kill")
    out = CliRunner().invoke(cli(), ["report", str(run)])
    assert out.exit_code == 0, out.output
    assert out.output.strip() == str(run / "report/index.html")
    out = CliRunner().invoke(cli(), ["report", "--index", str(tmp_path / "runs")])
    assert out.exit_code == 0, out.output
    assert (tmp_path / "runs/index.html").is_file()


def test_a_run_and_a_directory_of_runs_mistaken_for_each_other_are_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    run = make_passing(runs / "20261120-020000-leader-kill")
    assert main(["report", "--index", str(run)]) == 2
    assert (
        f"{run}: a run directory, not a directory of runs (`kchaos report {run}`)" in capsys.readouterr().err
    )
    assert main(["report", str(runs)]) == 2
    said = capsys.readouterr().err
    assert f"{runs}: a directory of runs, not a run directory (`kchaos report --index {runs}`)" in said
    assert not (run / "index.html").exists()


def run_cells(page: Page, cls: str) -> dict[str, str]:
    """The text of each run's cell of class `cls` in the index's tables of runs, by run."""
    cells, run = {}, ""
    for el in page.elements:
        if el.tag == "tr" and "run" in el.classes:
            run = el.attrs["data-run-id"]
        elif el.tag == "td" and cls in el.classes:
            cells[run] = "".join(el.text).strip()
    return cells


def test_index_groups_runs_and_shows_trends(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    make_passing(runs / "n1-leader-kill", "2026-11-19T02:00:00Z")
    make_failing(runs / "n2-leader-kill", "2026-11-20T02:00:00Z")
    make_passing(runs / "n3-leader-kill", "2026-11-21T02:00:00Z")
    make_passing(runs / "n1-partition", "2026-11-19T03:00:00Z", scenario="partition-halves")
    unchecked = make_passing(runs / "n2-partition", "2026-11-20T03:00:00Z", scenario="partition-halves")
    (unchecked / "check/result.json").unlink()
    shutil.copytree(runs / "n1-partition", runs / "broken")
    (runs / "broken/run.json").write_text("{not json")
    (runs / "not-a-run").mkdir()

    page = parse(write_index(runs).read_text(encoding="utf-8"))
    by_scenario = {s.attrs["data-scenario"] for s in page.find("section", "scenario")}
    assert by_scenario == {"leader-kill", "partition-halves", "unreadable"}
    status = {r.attrs["data-run-id"]: r.attrs["data-status"] for r in page.find("tr", "run")}
    assert status == {
        "n1-leader-kill": "pass",
        "n2-leader-kill": "fail",
        "n3-leader-kill": "pass",
        "n1-partition": "pass",
        "n2-partition": "not-checked",
        "broken": "error",
    }
    links = {a.attrs["href"] for a in page.find("a")}
    assert "./n2-leader-kill/report/index.html" in links and not any("n2-partition" in h for h in links)
    assert (runs / "n2-leader-kill/report/index.html").is_file()  # the index rendered missing reports
    # Newest first in the table; trends run oldest to newest, one point per checked run and acks mode.
    rows = [
        r.attrs["data-run-id"]
        for r in page.find("tr", "run")
        if r.attrs["data-run-id"].endswith("leader-kill")
    ]
    assert rows == ["n3-leader-kill", "n2-leader-kill", "n1-leader-kill"]
    trends = page.find("svg", "trend")
    assert len(trends) == 10  # 4 per checked scenario, and 2 for leader-kill's consumer group
    # A line per group, its points where a run had it (n2, the failing run, only).
    redelivered = [
        c.attrs["data-tip"]
        for c in page.find("circle", "g0")
        if " records redelivered " in c.attrs["data-tip"]
    ]
    assert redelivered == ["n2-leader-kill (2026-11-20T02:00:00Z): group g-alo records redelivered 40"]
    cells = run_cells(page, "groups")
    assert cells["n2-leader-kill"] == "g-alo: 2 / 40" and cells["n1-leader-kill"] == ""
    assert "n1-partition" not in cells  # a scenario without consumer groups has no groups column
    lost = [
        c.attrs["data-tip"] for c in page.find("circle", "acks-all") if " lost writes " in c.attrs["data-tip"]
    ]
    assert [t.split(" ")[0] for t in lost[:3]] == ["n1-leader-kill", "n2-leader-kill", "n3-leader-kill"]
    assert lost[1].endswith("lost writes 3")


def test_index_leaves_out_an_acks_mode_the_runs_did_not_write_under(tmp_path: Path) -> None:
    run = make_passing(tmp_path / "runs/n1-leader-kill")
    result = json.loads((run / "check/result.json").read_text())
    result["acks"]["0"] = {k: 0 for k in result["acks"]["0"]}  # how result.json counts an unused mode
    (run / "check/result.json").write_text(json.dumps(result))
    page = parse(write_index(tmp_path / "runs").read_text(encoding="utf-8"))
    assert page.find("circle", "acks-all") and not page.find("circle", "acks-0")
    assert not page.find("path", "acks-0")


def test_index_of_missing_directory_is_an_input_error(tmp_path: Path) -> None:
    from contract.errors import InputError

    with pytest.raises(InputError):
        write_index(tmp_path / "nope")


def test_index_charts_the_recovery_after_heals_where_runs_measured_it(tmp_path: Path) -> None:
    for name, ms in (("n1-leader-kill", 2000.0), ("n2-leader-kill", 29500.0)):
        run = make_passing(tmp_path / "runs" / name)
        result = json.loads((run / "check/result.json").read_text())
        (row,) = result["availability"]["recovery"]
        longest = {"heal_recovery_ms": ms, "heal_recovery_lower_bound": ms > 20000}
        result["availability"]["recovery"] = [row | longest | {"healed_ns": 30 * S}]
        result["acks"]["all"] |= longest  # as the checker sums up the recovery rows
        (run / "check/result.json").write_text(json.dumps(result))
    page = parse(write_index(tmp_path / "runs").read_text(encoding="utf-8"))
    tips = [
        c.attrs["data-tip"] for c in page.find("circle", "acks-all") if "after a heal" in c.attrs["data-tip"]
    ]
    assert [t.split(" ")[0] for t in tips] == ["n1-leader-kill", "n2-leader-kill"]
    assert tips[0].endswith("took writes (s) 2"), tips
    assert tips[1].endswith(
        "took writes (s) 29.5 or more (not reached by the writes' end or the next fault)"
    ), tips


def test_index_charts_a_groups_recovery_after_heals_where_runs_measured_it(tmp_path: Path) -> None:
    for name, ms in (("n1-leader-kill", None), ("n2-leader-kill", 4500.0), ("n3-leader-kill", 12000.0)):
        run = make_failing(tmp_path / "runs" / name)
        result = json.loads((run / "check/result.json").read_text())
        result["groups"]["g-alo"] |= {"heal_recovery_ms": ms, "heal_recovery_lower_bound": ms == 12000.0}
        (run / "check/result.json").write_text(json.dumps(result))
    page = parse(write_index(tmp_path / "runs").read_text(encoding="utf-8"))
    tips = [c.attrs["data-tip"] for c in page.find("circle", "g0") if "after a heal" in c.attrs["data-tip"]]
    assert [t.split(" ")[0] for t in tips] == ["n2-leader-kill", "n3-leader-kill"]  # n1 judged none
    assert tips[0].endswith("until the group read every partition again (s) 4.5"), tips
    assert tips[1].endswith("again (s) 12 or more (not reached by the workload's end or the next fault)"), (
        tips
    )


def _on_release(run: Path, version: str) -> Path:
    data = json.loads((run / "run.json").read_text())
    data["kafka"]["version"] = version
    (run / "run.json").write_text(json.dumps(data))
    return run


def test_index_tables_a_scenarios_guarantees_by_kafka_release(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    make_passing(runs / "n1-leader-kill", "2026-11-19T02:00:00Z")
    _on_release(make_failing(runs / "n2-leader-kill", "2026-11-20T02:00:00Z"), "3.9.2")
    _on_release(make_passing(runs / "n3-leader-kill", "2026-11-21T02:00:00Z"), "3.9.2")
    make_passing(runs / "n1-partition", scenario="partition-halves")  # one release: no table

    page = parse(write_index(runs).read_text(encoding="utf-8"))
    assert len(page.find("table", "releases")) == 1  # leader-kill's; partition-halves ran on one release
    heads = [" ".join(th.text).strip() for th in page.find("th") if " ".join(th.text).startswith("Kafka ")]
    assert heads == ["Kafka 0.9.0.1", "Kafka 3.9.2"]
    cells = {
        td.attrs["data-kafka"]: " ".join("".join(td.text).split())
        for td in page.find("td", data_guarantee="no-phantom-writes")
    }
    assert cells == {"0.9.0.1": "held 1 seed 7", "3.9.2": "violated 1 held 1 seed 7, seed 7"}  # worst first
    links = [
        (a.attrs["href"], a.attrs["title"])
        for a in page.find("a", "release-run", data_guarantee="no-phantom-writes")
    ]
    assert links == [
        ("./n1-leader-kill/report/index.html", "n1-leader-kill: held"),
        ("./n2-leader-kill/report/index.html", "n2-leader-kill: violated"),
        ("./n3-leader-kill/report/index.html", "n3-leader-kill: held"),
    ]


def test_junit_not_exercised_is_skipped_saying_over_what(plain_run: Path) -> None:
    root = junit(plain_run)  # valid against the schema
    cases = {c.get("name"): c for c in root.findall("testsuite/testcase")}
    skipped = cases["no-phantom-writes[chaos-acks-all]"].find("skipped")
    assert skipped is not None and (skipped.get("message") or "").startswith(
        "not exercised: 0 writes that failed definitely ("
    )
    assert cases["no-lost-acked-writes[chaos-acks-all]"].find("skipped") is None  # held: passed
    assert root.get("failures") == "0" and root.get("errors") == "0"
    summary = json.loads((plain_run / "report/summary.json").read_text())
    assert summary["passed"] is True and summary["violated"] == []  # not exercised is not broken
    (row,) = [
        g for g in summary["guarantees"] if (g["id"], g["topic"]) == ("no-phantom-writes", "chaos-acks-1")
    ]
    assert row["exercised"] == {"count": 0, "what": "writes that failed definitely"}


def test_index_shows_the_counts_and_columns_that_apply_to_each_scenario(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    make_plain_run(runs / "n1-leader-kill")
    make_transaction_run(runs / "n1-txn-pipeline")
    page = parse(write_index(runs).read_text(encoding="utf-8"))
    heads = {
        scenario: ["".join(th.text) for th in cells] for scenario, cells in page.per_scenario("th").items()
    }
    assert "acks=all lost / divergent / duplicated" in heads["leader-kill"]
    assert "acks=0 lost / divergent / duplicated" in heads["leader-kill"]
    assert not [h for h in heads["leader-kill"] if h.startswith("groups")]
    # The transaction run wrote acks=all only, judged committed records, and ran consumer groups.
    assert [h for h in heads["txn-pipeline"] if h.startswith("acks=")] == [
        "acks=all lost / divergent / duplicated / lost_committed"
    ]
    assert "groups: skipped / redelivered" in heads["txn-pipeline"]
    assert run_cells(page, "groups") == {"n1-txn-pipeline": "g-rc: 0 / 12, g-ru: 0 / 12"}


def test_index_release_table_counts_runs_that_did_not_exercise_a_guarantee(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    make_passing(runs / "n1-leader-kill", "2026-11-19T02:00:00Z")  # held no-phantom-writes
    _on_release(make_plain_run(runs / "n2-leader-kill", "2026-11-20T02:00:00Z"), "3.9.2")
    page = parse(write_index(runs).read_text(encoding="utf-8"))
    (cell,) = page.find("td", data_guarantee="no-phantom-writes", data_kafka="3.9.2")
    start = page.elements.index(cell)
    badge = next(el for el in page.elements[start:] if el.tag == "span" and "badge" in el.classes)
    assert "v-not-exercised" in badge.classes and "".join(badge.text) == "not-exercised 1"  # not unknown
