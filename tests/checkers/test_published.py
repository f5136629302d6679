"""What a check makes in a run directory is built in private and published whole
(`checkers.io.published`): the whole-lines copy of `--prefix` made by ten checks at once is one
copy, a half-made or foreign one at its name is replaced, and what killed checks left is removed
while a live check's build is not. No Spark: the copy is made before it starts. (Ten whole checks
at once, cache and all: test_checks_at_once.py.)"""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

from checker_rundirs import clean_run

from checkers.io.published import publish, remove_stale
from checkers.io.scanned import PREFIX_DIR, scan_run
from contract.history import READS, fresh_dir, private_name, write_atomic

TORN = b'{"type": "record", "time_ns": 9'


def _torn_run(root: Path) -> tuple[Path, bytes]:
    """A clean run whose reads.jsonl ends in a torn line; and its whole lines."""
    run_dir = clean_run(root)
    whole = (run_dir / READS).read_bytes()
    (run_dir / READS).write_bytes(whole + TORN)
    return run_dir, whole


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_ten_prefix_copies_made_at_once_are_one_whole_copy(tmp_path: Path) -> None:
    run_dir, whole = _torn_run(tmp_path / "run")
    start = threading.Barrier(10)
    roots: list[Path] = []
    errors: list[BaseException] = []

    def one() -> None:
        start.wait()
        try:
            roots.append(scan_run(run_dir, prefix=True).root)
        except BaseException as exc:  # collected: the test names every failure
            errors.append(exc)

    threads = [threading.Thread(target=one) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert len(set(roots)) == 1 and len(roots) == 10
    (root,) = set(roots)
    assert (root / READS).read_bytes() == whole  # the whole lines, once: nothing half-made or doubled
    assert [p.name for p in (run_dir / PREFIX_DIR).iterdir()] == [root.name]  # no build left over
    assert (run_dir / READS).read_bytes() == whole + TORN  # the evidence is never changed


def test_what_is_at_the_name_but_not_what_it_stands_for_is_replaced(tmp_path: Path) -> None:
    run_dir, whole = _torn_run(tmp_path / "run")
    made = scan_run(run_dir, prefix=True).root
    (made / READS).write_bytes(whole[:10])  # cut short, as by hand
    again = scan_run(run_dir, prefix=True).root
    assert again == made and (again / READS).read_bytes() == whole
    assert [p.name for p in (run_dir / PREFIX_DIR).iterdir()] == [made.name]


def test_stale_entries_and_killed_builds_go_and_a_live_build_stays(tmp_path: Path) -> None:
    run_dir, _ = _torn_run(tmp_path / "run")
    dead = private_name(PREFIX_DIR, "build").split("/")[-1].replace(f"-{os.getpid()}-", f"-{_dead_pid()}-", 1)
    live = private_name(PREFIX_DIR, "build")  # this process's: at work
    for name in (f"{PREFIX_DIR}/{dead}", live, f"{PREFIX_DIR}/0123456789abcdef"):
        fresh_dir(run_dir, name)
    write_atomic(run_dir, f"{PREFIX_DIR}/run.json", "{}")  # the layout before copies were named
    root = scan_run(run_dir, prefix=True).root
    assert sorted(p.name for p in (run_dir / PREFIX_DIR).iterdir()) == sorted(
        [root.name, live.split("/")[-1]]
    )


def test_a_second_publisher_of_one_name_keeps_the_first(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    first, second = (private_name("check/made", "build") for _ in range(2))
    for built, mark in ((first, "1"), (second, "2")):
        write_atomic(run_dir, f"{built}/mark", mark)

    def whole(path: Path) -> bool:
        return (path / "mark").is_file()

    publish(run_dir, first, "check/made/x", whole)
    publish(run_dir, second, "check/made/x", whole)  # taken, and whole: the second is not published
    assert (run_dir / "check/made/x/mark").read_text() == "1" and (run_dir / second).is_dir()
    remove_stale(run_dir, "check/made", "check/made/x")  # the second's own build is its to delete
    assert (run_dir / second).is_dir()
