"""The checker's entry point: one run directory in, check/result.json out."""

from __future__ import annotations

import time
from contextlib import suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from checkers.io import check_layout, discard_result, history_bytes, load_history, parsed_files, write_result
from checkers.io.scanned import scan_run
from checkers.result import build_result
from checkers.session import get_spark, size_for, spark_errors, start_in_background
from contract.history import WRITES


def check_run(run_dir: Path, master: str | None = None, *, prefix: bool = False) -> dict[str, Any]:
    """Check one run directory on Spark; return the result dict, also written to check/result.json.
    With `prefix`, a history file with a torn tail is judged up to its last whole line
    (`checkers.io.scanned`).

    Raises HistoryError for unusable input, EnvironmentError_ when Spark cannot start and SparkError
    when a Spark job fails.
    """
    started = time.monotonic()
    checked_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    discard_result(run_dir)
    # The JVM starts while Python validates the files and pyarrow parses them.
    start_checking(run_dir, master, read_back=False)
    scanned = scan_run(run_dir, prefix=prefix)
    layout = check_layout(scanned.root)
    size = history_bytes(scanned.root)
    with parsed_files(scanned.root, layout.run, scanned.digests()) as parsed:
        spark = get_spark(master, history_bytes=size)
        size_for(spark, size)
        history = load_history(spark, scanned.root, layout, parsed)
    spark_info: dict[str, Any] = {"master": spark.sparkContext.master, "version": spark.version}
    with spark_errors("checking the history", str(run_dir)):
        result = build_result(history, checked_at, spark_info)
    spark_info["seconds"] = round(time.monotonic() - started, 1)
    result["history_files"] = scanned.recorded()
    result["prefix"] = scanned.prefix
    write_result(run_dir, result)
    return result


def start_checking(run_dir: Path, master: str | None = None, *, read_back: bool = True) -> None:
    """Start Spark in the background, unless it runs already, while a run is still finishing (heal,
    final read, teardown) or its files are being validated, so that its check does not wait for the
    JVM. The JVM is tuned for the history's size; with `read_back`, the final read is still to read
    back what was written: about the size of writes.jsonl, once more."""
    with suppress(OSError):  # no history files: the check will say so, there is nothing to start for
        more = (run_dir / WRITES).stat().st_size if read_back else 0
        start_in_background(master, history_bytes(run_dir) + more)
