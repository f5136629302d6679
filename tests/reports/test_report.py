"""The HTML run report against its inputs: verdicts, counts, fault windows, anomalies, escaping."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from report_runs import HOSTILE, S, write_jsonl
from reportpage import Page, parse

from contract.checked_run import load_cluster, load_faults, load_run
from contract.errors import HistoryError, InputError
from faults import make_fault
from reports import write_report
from reports.explain import FAULT_FALLBACK


def render(run_dir: Path) -> tuple[Page, str, dict[str, Any]]:
    html = write_report(run_dir).read_text(encoding="utf-8")
    result = json.loads((run_dir / "check/result.json").read_text())
    return parse(html), html, result


@pytest.mark.parametrize("which", ["passing_run", "failing_run"])
def test_verdict_and_guarantees_match_result(which: str, request: pytest.FixtureRequest) -> None:
    page, _, result = render(request.getfixturevalue(which))
    assert page.find("html")[0].attrs["data-valid"] == str(result["valid"]).lower()
    banner = page.find("section", id="verdict")[0]
    assert banner.attrs["data-valid"] == str(result["valid"]).lower()
    assert ("PASS" if result["valid"] else "FAIL") in "".join(banner.text)
    assert page.find(id="completeness")[0].attrs["data-complete"] == str(result["complete"]).lower()
    cells = [
        (c.attrs["data-id"], c.attrs["data-where"], c.attrs["data-verdict"])
        for c in page.find("details", "verdict-cell", data_family="topic")
    ]
    assert sorted(cells) == sorted((g["id"], g["topic"], g["verdict"]) for g in result["guarantees"])


@pytest.mark.parametrize("which", ["passing_run", "failing_run"])
def test_scorecard_counts_match_result(which: str, request: pytest.FixtureRequest) -> None:
    page, _, result = render(request.getfixturevalue(which))
    shown = [r.attrs["data-count"] for r in page.find("tr", "count-row")]
    for acks, counts in result["acks"].items():
        assert len(page.find("th", "score", data_acks=acks)) == 1
        cells = {c.attrs["data-count"]: int(c.attrs["data-value"]) for c in page.find("td", data_acks=acks)}
        assert cells == {k: counts[k] for k in shown}
        assert all(v == 0 for k, v in counts.items() if k not in shown)  # what is left out found nothing


def test_an_acks_mode_the_run_neither_declared_nor_wrote_under_has_no_scorecard_row(
    passing_run: Path,
) -> None:
    run = json.loads((passing_run / "run.json").read_text())
    run["topics"] = [t for t in run["topics"] if t["acks"] == "all"]
    (passing_run / "run.json").write_text(json.dumps(run))
    result = json.loads((passing_run / "check/result.json").read_text())
    result["acks"] = {m: c if m == "all" else dict.fromkeys(c, 0) for m, c in result["acks"].items()}
    result["availability"]["series"] = [r for r in result["availability"]["series"] if r["acks"] == "all"]
    (passing_run / "check/result.json").write_text(json.dumps(result))
    page, _, _ = render(passing_run)
    assert [h.attrs["data-acks"] for h in page.find("th", "score")] == ["all"]


def test_fault_windows_match_faults_jsonl(failing_run: Path) -> None:
    page, _, _ = render(failing_run)
    events = [json.loads(line) for line in (failing_run / "history/faults.jsonl").read_text().splitlines()]
    starts = [e for e in events if e["phase"] == "start"]
    expected = set()
    for s in starts:
        stop = next(
            (
                e
                for e in events
                if e["phase"] == "stop"
                and e["fault"] == s["fault"]
                and e["targets"] == s["targets"]
                and e["time_ns"] >= s["time_ns"]
            ),
            None,
        )
        expected.add(
            (
                s["fault"],
                ",".join(s["targets"]),
                str(s["time_ns"]),
                "" if stop is None else str(stop["time_ns"]),
            )
        )
    for cls, tag in (("fault", "tr"), ("fault-bar", "rect")):
        got = {
            (
                el.attrs["data-fault"],
                el.attrs["data-targets"],
                el.attrs["data-start-ns"],
                el.attrs["data-stop-ns"],
            )
            for el in page.find(tag, cls)
        }
        assert got == expected, cls
    assert ("slow", "kafka-3", str(50 * S), "") in expected  # never healed: drawn to the end of the run
    # Shaded on every timeline: faults strip has bars, the other five charts (throughput, latency,
    # consumer groups processing and lag, cluster) one band per window.
    assert len(page.find("rect", "fault-band")) == 5 * len(expected)
    # Each fault kind is explained next to the table, in the words of its fault class, recorded
    # at its start; a history from before fault descriptions says so.
    explained = "".join(page.find("dl", "explain")[0].text)
    assert make_fault("kill").describe() in explained and "SIGKILL" in explained
    assert "partition-isolate-from-zookeeper isolate-from-zookeeper" in explained
    assert "still reaches the other brokers but not ZooKeeper" in explained
    assert "slow" + FAULT_FALLBACK in explained


def test_anomaly_groups_and_markers_match_result(failing_run: Path) -> None:
    page, _, result = render(failing_run)
    groups = {g.attrs["data-kind"]: int(g.attrs["data-count"]) for g in page.find("details", "anomaly-group")}
    assert groups == {k: a["count"] for k, a in result["anomalies"].items()}
    examples = [t for t in page.find("table", "examples") if "group-examples" not in t.classes]
    assert {t.attrs["id"] for t in examples} == {
        f"anomalies-{k}" for k, a in result["anomalies"].items() if a["examples"]
    }
    for kind in ("lost", "divergent"):
        marked = sum(int(m.attrs["data-count"]) for m in page.find("g", "marker", data_kind=kind))
        assert marked == sum(r[kind] for r in result["availability"]["series"]) > 0
    # Each anomaly kind carries its plain-language explanation.
    assert "succeeded, but it is not in the partition" in "".join(
        page.find("details", data_kind="lost-write")[0].text
    )


def test_run_data_is_escaped(failing_run: Path) -> None:
    page, html, _ = render(failing_run)
    assert HOSTILE not in html
    assert "evil.example" not in "".join(el.attrs.get("src", "") for el in page.elements)
    assert len(page.find("script")) == 2  # ours only: the error recorder and the page script
    assert not page.find("img")
    assert HOSTILE in "".join(page.find("table", id="fault-table")[0].text)  # shown as text


EXTERNAL = re.compile(r"^\s*(?:[a-z][a-z0-9+.-]*:|//)", re.I)


@pytest.mark.parametrize("which", ["passing_run", "failing_run"])
def test_page_makes_no_external_requests(which: str, request: pytest.FixtureRequest) -> None:
    page, html, _ = render(request.getfixturevalue(which))
    for el in page.elements:
        for name in ("src", "href", "xlink:href", "action", "data", "poster", "srcset", "background"):
            value = el.attrs.get(name)
            assert value is None or not EXTERNAL.match(value) or value.startswith("data:"), (
                el.tag,
                name,
                value,
            )
        assert el.tag not in ("link", "iframe", "object", "embed", "img", "audio", "video", "base")
    styles, scripts = page.text("style"), page.text("script")
    assert "url(" not in styles and "@import" not in styles
    for api in ("fetch(", "XMLHttpRequest", "import(", "WebSocket", "EventSource", "sendBeacon", ".src"):
        assert api not in scripts
    csp = page.find("meta", http_equiv="Content-Security-Policy")[0].attrs["content"]
    assert "default-src 'none'" in csp
    if which == "passing_run":  # no run data with URLs in it: the only URL is the SVG namespace name
        assert set(re.findall(r"(?:https?:)?//[^\s\"'<>)]+", html)) == {"http://www.w3.org/2000/svg"}


def test_config_and_cluster_state(passing_run: Path) -> None:
    page, _, _ = render(passing_run)
    config = {d.attrs["data-key"]: "".join(d.text) for d in page.find("dd") if "data-key" in d.attrs}
    assert config["Kafka version"] == "0.9.0.1"
    assert config["brokers"] == "3"
    assert config["min.insync.replicas"] == "2"
    assert config["unclean.leader.election.enable"] == "false"
    assert config["seed"] == "7"
    assert config["producer max.in.flight.requests.per.connection"] == "1"
    lanes = [g.attrs["data-lane"] for g in page.find("g", "lane")]
    assert lanes[:4] == ["controller", "broker 1", "broker 2", "broker 3"]
    assert "chaos-acks-all/0" in lanes and lanes.count("ISR") == 6
    downs = [r for r in page.find("rect", "down")]
    assert len(downs) == 1 and "broker 1" in downs[0].attrs["data-tip"]


def test_cluster_samples_keep_only_changes(passing_run: Path) -> None:
    samples = load_cluster(passing_run)
    assert [s.time_ns // S for s in samples] == [0, 20, 30, 59]  # changes at 20 s and 30 s, plus the last


def test_unknown_defaults_for_unclean_election(failing_run: Path) -> None:
    page, _, _ = render(failing_run)
    value = "".join(page.find("dd", data_key="unclean.leader.election.enable")[0].text)
    assert value.startswith("true (default for Kafka 0.9")


def test_missing_result_says_run_check_first(passing_run: Path) -> None:
    (passing_run / "check/result.json").unlink()
    with pytest.raises(InputError, match=r"run `kchaos check .*` first"):
        write_report(passing_run)


def test_a_result_that_is_a_directory_is_named_as_such(passing_run: Path) -> None:
    (passing_run / "check/result.json").unlink()
    (passing_run / "check/result.json").mkdir()
    with pytest.raises(InputError, match=r"result\.json: expected a regular file, found a directory"):
        write_report(passing_run)


def test_unknown_result_format_is_rejected(passing_run: Path) -> None:
    path = passing_run / "check/result.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "result_format": 99}))
    with pytest.raises(InputError, match="unknown result_format 99"):
        write_report(passing_run)


def test_a_result_of_another_run_is_rejected(passing_run: Path) -> None:
    # A run directory copied over another's check/ (or a result.json put there by hand).
    path = passing_run / "check/result.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "run_id": "20260101-000000-other-0000"}))
    with pytest.raises(InputError, match=r"the result of run '20260101-000000-other-0000', not of this run"):
        write_report(passing_run)


def test_bad_fault_line_points_at_the_line(passing_run: Path) -> None:
    path = passing_run / "history/faults.jsonl"
    path.write_text(path.read_text() + '{"fault": "kill", "phase": "start"}\n')
    with pytest.raises(HistoryError, match=r"faults.jsonl:3: "):
        load_faults(passing_run)


def test_stop_without_start_is_an_error(passing_run: Path) -> None:
    write_jsonl(
        passing_run / "history/faults.jsonl",
        [{"time_ns": 1, "fault": "pause", "phase": "stop", "targets": []}],
    )
    with pytest.raises(HistoryError, match="never started"):
        load_faults(passing_run)


def test_run_without_history_files_still_renders(passing_run: Path) -> None:
    (passing_run / "history/faults.jsonl").unlink()
    (passing_run / "history/cluster.jsonl").unlink()
    page, _, _ = render(passing_run)
    assert not page.find("tr", "fault")
    assert load_run(passing_run).end_ns == 60 * S


def test_a_failed_checker_shows_as_not_judged(failing_run: Path) -> None:
    result_path = failing_run / "check/result.json"
    result = json.loads(result_path.read_text())
    result["anomalies"]["reordered"] = {
        "count": None,
        "examples": [],
        "examples_capped": False,
        "error": "SparkError: the JVM died",
    }
    result["errors"] = [{"kind": "reordered", "error": "SparkError: the JVM died"}]
    for counts in result["acks"].values():
        counts["reordered"] = None
    result_path.write_text(json.dumps(result))
    page, _, _ = render(failing_run)
    group = page.find("details", data_kind="reordered")[0]
    assert "open" in group.attrs
    assert "Not judged: the checker of this kind failed (SparkError: the JVM died)" in " ".join(group.text)
    cells = page.find("td", data_count="reordered")
    assert cells and all(c.attrs["data-value"] == "None" and "?" in "".join(c.text) for c in cells)
    assert all("bad" in c.classes for c in cells)


def test_recovery_after_each_heal_is_shown_and_one_not_reached_is_marked(passing_run: Path) -> None:
    result_path = passing_run / "check/result.json"
    result = json.loads(result_path.read_text())
    (row,) = result["availability"]["recovery"]  # as results written before heals were measured
    healed = {"healed_ns": 30 * S, "resumed_ns": None, "heal_recovery_ms": 25244.7}  # shown floored
    result["availability"]["recovery"] = [
        row,
        {**row, **healed, "acks": "1", "heal_recovery_lower_bound": True},
        {
            **row,
            **healed,
            "resumed_ns": 31 * S,
            "heal_recovery_ms": 1000.0,
            "heal_recovery_lower_bound": False,
        },
    ]
    result_path.write_text(json.dumps(result))
    page, _, _ = render(passing_run)
    cells = [" ".join(el.text) for el in page.find("td")]
    assert "not by the writes' end or the next fault, 25244 ms later" in cells
    assert "1000 ms" in cells
    (marked,) = [el for el in page.find("td", "bad") if el.text and "writes' end" in el.text[0]]
    assert marked.text == ["not by the writes' end or the next fault, 25244 ms later"]


def test_a_power_loss_says_what_each_disk_dropped_and_a_killed_process_is_named(passing_run: Path) -> None:
    dropped = {
        "kafka-1": {
            "unsynced_bytes": 41237,
            "dropped_bytes": 41237,
            "files": {
                "chaos-acks-all-0/00000000000000000000.log": {"unsynced": 41000, "dropped": 41000},
                "chaos-acks-all-0/00000000000000000000.index": {"unsynced": 237, "dropped": 237},
            },
            "undone": ["create chaos-acks-all-0/leader-epoch-checkpoint.tmp"],
        },
        "kafka-2": {"unsynced_bytes": 0, "dropped_bytes": 0, "files": {}, "undone": []},
    }
    events = [
        {
            "time_ns": 2 * S,
            "fault": "power-loss",
            "phase": "start",
            "targets": ["kafka-1", "kafka-2"],
            "id": 90,
            "detail": {"target": "cluster", "dropped": dropped},
        },
        {
            "time_ns": 3 * S,
            "fault": "power-loss",
            "phase": "stop",
            "targets": ["kafka-1", "kafka-2"],
            "id": 90,
            "detail": {},
        },
    ]
    with (passing_run / "history/faults.jsonl").open("a") as f:
        f.writelines(json.dumps(e) + "\n" for e in events)
    run = json.loads((passing_run / "run.json").read_text())
    run["cluster"]["disk"] = "lossy"
    run["workload"] = {
        "stop_bound_s": 10,
        "killed": [{"process": "pipe-0", "why": "did not stop within 10 s"}],
    }
    (passing_run / "run.json").write_text(json.dumps(run))
    page, _, _ = render(passing_run)
    said = "kafka-1 dropped 41,237 of 41,237 unsynced bytes in 2 files, undid 1 directory change; " + (
        "kafka-2 dropped 0 of 0 unsynced bytes"
    )
    row = next(r for r in page.find("tr", "fault") if r.attrs["data-fault"] == "power-loss")
    assert f"power lost: {said}" in "".join(row.text)
    assert any(said in (band.attrs.get("data-tip") or "") for band in page.find("rect", "fault-band"))
    config = {d.attrs["data-key"]: "".join(d.text) for d in page.find("dd") if "data-key" in d.attrs}
    assert config["killed at the stop bound: pipe-0"] == "did not stop within 10 s"
    assert config["disk"].startswith("lossy")
