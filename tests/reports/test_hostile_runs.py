"""`kchaos report` on run directories broken the ways issue 26 found (each was a traceback and exit
1): one line naming the file, line and field, and exit 2; the index page lists such a run as an error."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kchaos.cli import main


def _json(name: str, change: Callable[[Any], None]) -> Callable[[Path], None]:
    def apply(run: Path) -> None:
        data = json.loads((run / name).read_text())
        change(data)
        (run / name).write_text(json.dumps(data))

    return apply


def _raw(name: str, old: str, new: bytes) -> Callable[[Path], None]:
    def apply(run: Path) -> None:
        (run / name).write_bytes((run / name).read_bytes().replace(old.encode(), new, 1))

    return apply


def _set(**fields: Any) -> Callable[[Any], None]:
    return lambda data: data.update(fields)


BROKEN = {
    "duration infinite": (
        _raw("run.json", '"duration_s": 60', b'"duration_s": Infinity'),
        "run.json: Infinity is not a JSON number",
    ),
    "duration 1e300": (
        _json("run.json", _set(duration_s=1e300)),
        "run.json: field 'duration_s': expected a number from 0 to 604800",
    ),
    "min.insync.replicas two": (
        _json("run.json", lambda r: r["cluster"]["broker_config"].update({"min.insync.replicas": "two"})),
        "run.json: field 'cluster.broker_config.min.insync.replicas': expected an integer of at least 1",
    ),
    "targets 5": (
        _raw("history/faults.jsonl", '"targets": ["kafka-1"]', b'"targets": 5'),
        "history/faults.jsonl:1: field 'targets': expected a list, got 5",
    ),
    "deep nesting": (
        _raw(
            "history/faults.jsonl",
            '"detail": {',
            b'"detail": {"x": ' + b"[" * 100_000 + b"]" * 100_000 + b", ",
        ),
        "history/faults.jsonl:1: nested deeper than 64 levels",
    ),
    "not UTF-8": (
        _raw("history/cluster.jsonl", '"controller": 1', b'"controller": "\xff"'),
        "history/cluster.jsonl:1: not UTF-8 (byte 0xff)",
    ),
    "count not a number": (
        _json("check/result.json", lambda r: r["acks"]["all"].update(lost="many")),
        "check/result.json: field 'acks.all.lost': expected an integer from 0 to",
    ),
    "series second beyond any run": (
        _json("check/result.json", lambda r: r["availability"]["series"][0].update(t_s=10**15)),
        "check/result.json: field 'availability.series[0].t_s': expected an integer from 0 to 691200",
    ),
    "error rate as text": (
        _json("check/result.json", lambda r: r["availability"]["latency"][0].update(error_rate="1%")),
        "check/result.json: field 'availability.latency[0].error_rate': expected a number from 0 to 1",
    ),
    "transaction count as text": (
        _json(
            "check/result.json",
            _set(transactions=[{"transactional_id": "kchaos-tx-0", "begun": "73", "committed": 60}]),
        ),
        "check/result.json: field 'transactions[0].begun': expected an integer from 0 to",
    ),
    "guarantee not an object": (
        _json("check/result.json", lambda r: r["guarantees"].append("held")),
        "check/result.json: field 'guarantees[4]': expected an object, got 'held'",
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_run_is_one_line_and_exit_2(
    passing_run: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    damage, message = BROKEN[case]
    damage(passing_run)
    code = main(["report", str(passing_run)])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert f"error: {passing_run}/{message}" in err, err
    assert not (passing_run / "report").exists()


def test_the_index_lists_a_broken_run_as_an_error(
    passing_run: Path, failing_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    BROKEN["count not a number"][0](failing_run)
    assert main(["report", "--index", str(passing_run.parent)]) == 0, capsys.readouterr().err
    page = (passing_run.parent / "index.html").read_text()
    assert "field &#39;acks.all.lost&#39;: expected an integer" in page
