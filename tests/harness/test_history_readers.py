"""The readers of run directories hold what they return to the format: UTF-8, bounded JSON (size,
nesting, 64-bit integers, finite numbers) and, for run.json, faults.jsonl and cluster.jsonl, every
field a checker or report uses. Each problem is a HistoryError naming the file, line and field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contract.errors import HistoryError
from contract.history_readers import (
    iter_cluster_samples,
    iter_fault_events,
    iter_jsonl,
    load_run_json,
)
from contract.strictjson import MAX_LINE_BYTES

GOOD = b'{"a": 1}\n'


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b'{"a": "\xff"}\n', ":2: not UTF-8 (byte 0xff)"),
        (b'{"a": NaN}\n', ":2: NaN is not a JSON number"),
        (b'{"a": -Infinity}\n', ":2: -Infinity is not a JSON number"),
        (b'{"a": 1e999}\n', ":2: number 1e999 is out of range"),
        (b'{"a": 9223372036854775808}\n', ":2: field 'a': integer 9223372036854775808 does not fit 64 bits"),
        (
            b'{"a": [1' + b"0" * 5000 + b"]}\n",
            ":2: field 'a[0]': integer 100000000000000000000000… does not fit 64 bits",
        ),
        (b'{"a": ' + b"[" * 65 + b"]" * 65 + b"}\n", ":2: nested deeper than 64 levels"),
        (b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n", ":2: nested deeper than 64 levels"),
        (b'{"a": "' + b"x" * MAX_LINE_BYTES + b'"}\n', ":2: line longer than 4 MiB"),
        (b"[1]\n", ":2: expected a JSON object"),
        (
            b'{"a": 1, "b": {"c": 1, "c": 2}}\n',
            ":2: key 'c' given twice in one object",
        ),  # json keeps the last
    ],
)
def test_a_hostile_line_is_an_error_naming_file_and_line(tmp_path: Path, line: bytes, message: str) -> None:
    path = tmp_path / "faults.jsonl"
    path.write_bytes(GOOD + line + GOOD)
    with pytest.raises(HistoryError) as caught:
        list(iter_jsonl(path))
    assert str(caught.value) == f"{path}{message}" and caught.value.line == 2


def test_a_torn_last_line_is_skipped_even_mid_character(tmp_path: Path) -> None:
    path = tmp_path / "cluster.jsonl"
    path.write_bytes(GOOD + '{"a": "é'.encode()[:-1])  # cut inside a two-byte character
    assert list(iter_jsonl(path)) == [(1, {"a": 1})]
    path.write_bytes(GOOD + b'{"a": NaN}')  # complete, but not a value the format allows
    with pytest.raises(HistoryError, match=r":2: NaN is not a JSON number"):
        list(iter_jsonl(path))


def test_a_directory_where_a_history_file_should_be_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "faults.jsonl").mkdir()
    with pytest.raises(HistoryError, match=r"faults\.jsonl: expected a regular file, found a directory"):
        list(iter_jsonl(tmp_path / "faults.jsonl", required=False))


def _run(tmp_path: Path, **fields: Any) -> Path:
    run = {"format": 1, "topics": [{"name": "t", "acks": "all", "partitions": 3}], **fields}
    (tmp_path / "run.json").write_text(json.dumps(run))
    return tmp_path


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"duration_s": 1e300}, "field 'duration_s': expected a number from 0 to 604800, got 1e+300"),
        (
            {"cluster": {"broker_config": {"min.insync.replicas": "two"}}},
            "field 'cluster.broker_config.min.insync.replicas': expected an integer of at least 1, got 'two'",
        ),
        (
            {"cluster": {"broker_config": {"unclean.leader.election.enable": "yes"}}},
            "field 'cluster.broker_config.unclean.leader.election.enable': expected true or false",
        ),
        (
            {"producer": {"max.in.flight.requests.per.connection": [5]}},
            "field 'producer.max.in.flight.requests.per.connection': expected a string, number or boolean",
        ),
        ({"kafka": "0.9.0.1"}, "field 'kafka': expected an object, got '0.9.0.1'"),
        ({"kafka": {"version": "9" * 100}}, "field 'kafka.version': expected a string of at most 64"),
        ({"cluster": {"brokers": 2.5}}, "field 'cluster.brokers': expected an integer from 1 to 1000"),
        ({"seed": [7]}, "field 'seed': expected an integer, got [7]"),
        ({"topics": [{"name": "t", "acks": "all", "partitions": 10**12}]}, "field 'topics[0].partitions'"),
        ({"topics": [{"name": "t", "acks": True}]}, "field 'topics[0].acks': expected one of 0, 1, all"),
        (
            {"topics": [{"name": "t", "acks": "all"}, {"name": "t", "acks": "1"}]},
            "field 'topics[1].name': expected a name no other topic has, got 't'",
        ),
        (
            {"topics": [{"name": "t", "acks": "all", "config": {"min.insync.replicas": "0"}}]},
            "field 'topics[0].config.min.insync.replicas': expected an integer of at least 1",
        ),
        (
            {"final_read": {"incomplete": [{"topic": "t", "partition": 0, "why": 3}]}},
            "field 'final_read.incomplete[0].why': expected a string of at most 1000 characters, got 3",
        ),
        (
            {"final_read": {"incomplete": [{"topic": "t"}]}},
            "field 'final_read.incomplete[0].partition': expected an integer from 0",
        ),
        (
            {"topics": [{"name": "t", "acks": "all", "transactions": {"early_abort_rate": 1.5}}]},
            "field 'topics[0].transactions.early_abort_rate': expected a number from 0 to 1",
        ),
        ({"workload": {"stop_bound_s": "ten"}}, "field 'workload.stop_bound_s': expected a number"),
        (
            {"workload": {"stop_bound_s": 10, "killed": [{"process": "pipe-0"}]}},
            "field 'workload.killed[0].why': expected a string",
        ),
    ],
)
def test_run_json_fields_readers_use_are_checked(
    tmp_path: Path, fields: dict[str, Any], message: str
) -> None:
    with pytest.raises(HistoryError) as caught:
        load_run_json(_run(tmp_path, **fields))
    assert str(caught.value).startswith(f"{tmp_path / 'run.json'}: {message}"), caught.value


def test_run_json_acks_are_read_as_strings(tmp_path: Path) -> None:
    run = load_run_json(_run(tmp_path, topics=[{"name": "t", "acks": 1}], seed=7, duration_s=60))
    assert run["topics"][0]["acks"] == "1"


def _events(tmp_path: Path, name: str, *events: dict[str, Any]) -> Path:
    (tmp_path / "history").mkdir(exist_ok=True)
    (tmp_path / "history" / name).write_text("".join(json.dumps(e) + "\n" for e in events))
    return tmp_path


FAULT = {"time_ns": 5, "fault": "kill", "phase": "start", "targets": ["kafka-1"], "detail": {}}
SAMPLE = {
    "time_ns": 5,
    "controller": 1,
    "live_brokers": [1, 2],
    "partitions": [{"topic": "t", "partition": 0, "leader": 1, "leader_epoch": 0, "isr": [1, 2]}],
}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"targets": 5}, "field 'targets': expected a list, got 5"),
        ({"targets": ["kafka-1", 2]}, "field 'targets': expected a list of node names"),
        ({"time_ns": -1}, "field 'time_ns': expected an integer from 0 to"),
        ({"time_ns": 2**62}, "field 'time_ns': expected an integer from 0 to 691200000000000"),
        ({"phase": "begin"}, "field 'phase': expected start or stop, got 'begin'"),
        ({"fault": None}, "field 'fault': expected a string, got None"),
        ({"detail": "x"}, "field 'detail': expected an object, got 'x'"),
    ],
)
def test_fault_events_are_checked(tmp_path: Path, change: dict[str, Any], message: str) -> None:
    root = _events(tmp_path, "faults.jsonl", FAULT, FAULT | change)
    with pytest.raises(HistoryError) as caught:
        list(iter_fault_events(root))
    assert str(caught.value).startswith(f"{root / 'history/faults.jsonl'}:2: {message}"), caught.value


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"live_brokers": "1,2"}, "field 'live_brokers': expected a list"),
        ({"live_brokers": [1, "2"]}, "field 'live_brokers': expected a list of at most 1000 integers"),
        ({"live_brokers": list(range(1001))}, "field 'live_brokers': expected a list of at most 1000"),
        ({"controller": "one"}, "field 'controller': expected an integer"),
        ({"partitions": {"t": 0}}, "field 'partitions': expected a list"),
        ({"partitions": [{"topic": "t", "partition": "0"}]}, "field 'partitions[0].partition'"),
        ({"partitions": [{"topic": "t", "partition": 0, "isr": [1.5]}]}, "field 'partitions[0].isr'"),
        ({"partitions": [7]}, "field 'partitions[0]': expected an object, got 7"),
    ],
)
def test_cluster_samples_are_checked(tmp_path: Path, change: dict[str, Any], message: str) -> None:
    root = _events(tmp_path, "cluster.jsonl", SAMPLE, SAMPLE | change)
    with pytest.raises(HistoryError) as caught:
        list(iter_cluster_samples(root))
    assert str(caught.value).startswith(f"{root / 'history/cluster.jsonl'}:2: {message}"), caught.value


def test_valid_small_files_read_back_whole(tmp_path: Path) -> None:
    root = _events(tmp_path, "faults.jsonl", FAULT, FAULT | {"phase": "stop"})
    _events(root, "cluster.jsonl", SAMPLE)
    assert [e for _, e in iter_fault_events(root)] == [FAULT, FAULT | {"phase": "stop"}]
    assert [s for _, s in iter_cluster_samples(root)] == [SAMPLE]
