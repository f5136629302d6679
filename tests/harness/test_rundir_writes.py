"""A run directory is data: kafka-chaos's writers never follow a symbolic link out of it.

`write_atomic`, `open_append` (HistoryWriter) and `fresh_dir` refuse a link at the file or at any
directory on the way below the run directory, with a HistoryError naming it; nothing outside changes.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

import pytest
from linked import LINK_REFUSED, make_outside, untouched

from contract.errors import HistoryError
from contract.history import HistoryWriter, RunDir, fresh_dir, write_atomic
from contract.history_readers import iter_jsonl, read_json_object
from harness.waiting import wait_until


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    return make_outside(tmp_path)


def test_write_atomic_writes_whole_files_and_makes_directories(tmp_path: Path) -> None:
    run = tmp_path / "run"
    target = write_atomic(run, "report/index.html", "<p>é</p>")
    assert target == run / "report/index.html"
    assert target.read_text(encoding="utf-8") == "<p>é</p>"
    write_atomic(run, "report/index.html", b"again")
    assert target.read_bytes() == b"again"
    assert os.listdir(run / "report") == ["index.html"]  # no temporary file left behind


def test_write_atomic_refuses_a_linked_file(tmp_path: Path, outside: Path) -> None:
    run = tmp_path / "run"
    (run / "report").mkdir(parents=True)
    (run / "report/index.html").symlink_to(outside / "index.html")
    with pytest.raises(HistoryError) as info:
        write_atomic(run, "report/index.html", "evil")
    assert str(info.value) == f"{run / 'report/index.html'}: {LINK_REFUSED}"
    assert untouched(outside)
    assert os.listdir(run / "report") == ["index.html"]  # the temporary file is not left


@pytest.mark.parametrize("dangling", [False, True])
def test_write_atomic_refuses_a_linked_directory(tmp_path: Path, outside: Path, dangling: bool) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "report").symlink_to(tmp_path / "nowhere" if dangling else outside)
    with pytest.raises(HistoryError, match=re.escape(LINK_REFUSED)) as info:
        write_atomic(run, "report/index.html", "evil")
    assert info.value.path == str(run / "report")
    assert untouched(outside)
    assert not (tmp_path / "nowhere").exists()


def test_a_linked_run_directory_itself_is_followed(tmp_path: Path, outside: Path) -> None:
    # The user names the run directory: a link to it is theirs. Only what is below it is data.
    (tmp_path / "run").symlink_to(outside, target_is_directory=True)
    write_atomic(tmp_path / "run", "report.txt", "ok")
    assert (outside / "report.txt").read_text() == "ok"


@pytest.mark.parametrize("name", ["../escape.txt", "/tmp/escape.txt", "report/../../escape.txt", ""])
def test_names_outside_the_run_directory_are_a_bug(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match="not a relative path inside a run directory"):
        write_atomic(tmp_path / "run", name, "x")
    assert not (tmp_path / "escape.txt").exists()


def test_history_writer_refuses_links(tmp_path: Path, outside: Path) -> None:
    run = RunDir(tmp_path / "run")
    (run.root / "history").mkdir(parents=True)
    (run.root / "history/writes.jsonl").symlink_to(outside / "index.html")
    with pytest.raises(HistoryError, match=re.escape(LINK_REFUSED)):
        run.writer("history/writes.jsonl")
    (run.root / "history/writes.jsonl").unlink()
    (run.root / "history").rmdir()
    (run.root / "history").symlink_to(outside)
    with pytest.raises(HistoryError, match=re.escape(LINK_REFUSED)):
        run.writer("history/reads.jsonl")
    assert untouched(outside)


def test_run_json_is_not_written_through_a_link(tmp_path: Path, outside: Path) -> None:
    run = RunDir(tmp_path / "run")
    run.root.mkdir()
    (run.root / "run.json").symlink_to(outside / "index.html")
    with pytest.raises(HistoryError, match=re.escape(LINK_REFUSED)):
        run.write_run_json({"topics": []})
    assert untouched(outside)


def test_fresh_dir_deletes_a_link_as_a_link(tmp_path: Path, outside: Path) -> None:
    run = tmp_path / "run"
    (run / "check").mkdir(parents=True)
    (run / "check/parquet").symlink_to(outside)
    cache = fresh_dir(run, "check/parquet")
    assert cache.is_dir() and not cache.is_symlink() and not list(cache.iterdir())
    assert untouched(outside)


def test_fresh_dir_never_follows_a_link_inside_what_it_deletes(tmp_path: Path, outside: Path) -> None:
    run = tmp_path / "run"
    (run / "check/parquet/values").mkdir(parents=True)
    (run / "check/parquet/values/part-0.parquet").write_text("stale")
    (run / "check/parquet/values/elsewhere").symlink_to(outside)
    (run / "check/parquet/linked.json").symlink_to(outside / "index.html")
    fresh_dir(run, "check/parquet")
    assert not list((run / "check/parquet").iterdir())
    assert untouched(outside)


def test_fresh_dir_refuses_a_linked_parent(tmp_path: Path, outside: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (outside / "parquet").mkdir()
    (outside / "parquet/keep").write_text("keep")
    (run / "check").symlink_to(outside)
    with pytest.raises(HistoryError, match=re.escape(LINK_REFUSED)):
        fresh_dir(run, "check/parquet")
    assert (outside / "parquet/keep").read_text() == "keep"


def test_unreadable_text_is_a_history_error_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "faults.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": "\xff"}\n')
    with pytest.raises(HistoryError) as info:
        list(iter_jsonl(path))
    assert str(info.value) == f"{path}:2: not UTF-8 (byte 0xff)"
    path.write_bytes(b'{"a": 1}\n{"a": "caf\xc3')  # a multi-byte character torn by a crash
    assert [obj for _, obj in iter_jsonl(path)] == [{"a": 1}]
    run_json = tmp_path / "run.json"
    run_json.write_bytes(b"\xfe{}")
    with pytest.raises(HistoryError, match=r"run\.json:1: not UTF-8 \(byte 0xfe\)"):
        read_json_object(run_json)
    run_json.unlink()
    run_json.mkdir()
    with pytest.raises(HistoryError, match=r"run\.json: cannot read \(Is a directory\)"):
        read_json_object(run_json)


def test_history_writer_opens_inside_a_given_root(tmp_path: Path) -> None:
    with HistoryWriter(tmp_path / "run/history/faults.jsonl", tmp_path / "run") as writer:
        writer.write({"time_ns": 1})
    assert (tmp_path / "run/history/faults.jsonl").read_text() == '{"time_ns":1}\n'


def test_history_is_synced_and_run_json_says_how_much(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    writes = run.writer("history/writes.jsonl")
    writes.write({"type": "invoke", "value": "p:1"})
    run.write_run_json({"topics": []})
    assert read_json_object(run.root / "run.json")["synced"] == {"history/writes.jsonl": 0}
    run.sync()
    size = (run.root / "history/writes.jsonl").stat().st_size
    assert read_json_object(run.root / "run.json")["synced"] == {"history/writes.jsonl": size}
    writes.write({"type": "ok", "value": "p:1"})
    writes.close()  # syncs what is left
    assert writes.synced_bytes == (run.root / "history/writes.jsonl").stat().st_size > size
    # run.json read back and written again (as a run does at its end) keeps the newest positions
    run.write_run_json({**read_json_object(run.root / "run.json"), "replicas": {}})
    recorded = read_json_object(run.root / "run.json")
    assert recorded["synced"] == {"history/writes.jsonl": writes.synced_bytes}
    assert recorded["format"] == 1 and recorded["replicas"] == {}


def test_each_fault_boundary_syncs_the_whole_history(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    writes = run.writer("history/writes.jsonl")
    faults = run.writer("history/faults.jsonl", boundary=True)
    run.write_run_json({"topics": []})
    writes.write({"type": "invoke", "value": "p:1"})
    faults.write({"phase": "start"})
    synced = read_json_object(run.root / "run.json")["synced"]
    assert synced == {
        "history/faults.jsonl": (run.root / "history/faults.jsonl").stat().st_size,
        "history/writes.jsonl": (run.root / "history/writes.jsonl").stat().st_size,
    }


def test_syncing_syncs_while_a_block_runs_and_as_it_ends(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    writes = run.writer("history/writes.jsonl")
    run.write_run_json({"topics": []})
    path = run.root / "history/writes.jsonl"
    with run.syncing(interval_s=0.01):
        writes.write({"type": "invoke", "value": "p:1"})
        wait_until(
            lambda: (writes.synced_bytes == path.stat().st_size, f"synced {writes.synced_bytes} bytes"),
            what="the interval's sync",
            timeout_s=10,
            interval_s=0.01,
        )
        writes.write({"type": "ok", "value": "p:1"})
    assert read_json_object(run.root / "run.json")["synced"] == {"history/writes.jsonl": path.stat().st_size}
    assert not [t for t in threading.enumerate() if t.name == "kchaos-history-sync"]
