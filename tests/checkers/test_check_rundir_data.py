"""`kchaos check` treats a run directory as data: it writes nothing through a link out of it, and
its Parquet cache is keyed by the content of the history, not by size and modification time."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from linked import LINK_REFUSED, make_outside, untouched
from pyspark.sql import SparkSession
from test_checker_cli import clean_run, kchaos_check

from contract.history import CHECK_CACHE, READS, RESULT

pytestmark = pytest.mark.spark


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    return make_outside(tmp_path)


def test_a_linked_check_directory_is_refused(
    spark: SparkSession, tmp_path: Path, outside: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    run_dir = clean_run(tmp_path / "run")
    (run_dir / "check").symlink_to(outside)
    code, text = kchaos_check(capfd, run_dir)
    assert (code, text.strip()) == (2, f"error: {run_dir / 'check'}: {LINK_REFUSED}")
    assert untouched(outside)


def test_a_linked_result_file_is_refused(
    spark: SparkSession, tmp_path: Path, outside: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    run_dir = clean_run(tmp_path / "run")
    (run_dir / "check").mkdir()
    (run_dir / RESULT).symlink_to(outside / "result.json")
    code, text = kchaos_check(capfd, run_dir)
    assert (code, text.strip()) == (2, f"error: {run_dir / RESULT}: {LINK_REFUSED}")
    assert untouched(outside)


def test_a_linked_cache_is_replaced_as_a_link(
    spark: SparkSession, tmp_path: Path, outside: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    run_dir = clean_run(tmp_path / "run")
    (run_dir / "check").mkdir()
    (run_dir / CHECK_CACHE).symlink_to(outside)
    code, text = kchaos_check(capfd, run_dir)
    assert code == 0, text
    cache = run_dir / CHECK_CACHE
    assert cache.is_dir() and not cache.is_symlink()
    (published,) = cache.iterdir()
    assert (published / "fingerprint.json").is_file()
    assert untouched(outside)


def test_an_edited_history_with_its_size_and_time_kept_is_converted_again(
    spark: SparkSession, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    run_dir = clean_run(tmp_path / "run")
    code, text = kchaos_check(capfd, run_dir)
    assert code == 0, text
    reads = run_dir / READS
    before = reads.stat()
    # The final read of acked write p:1 now holds p:9, a value nobody wrote: same size, same mtime.
    reads.write_text(reads.read_text().replace('"value": "p:1"', '"value": "p:9"', 1))
    os.utime(reads, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (reads.stat().st_size, reads.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    code, text = kchaos_check(capfd, run_dir)
    assert code == 1, text
    result = json.loads((run_dir / RESULT).read_text())
    assert (result["valid"], result["acks"]["all"]["lost"], result["unexpected"]) == (False, 1, 1)
