"""The class archive builder's child process: checks a small synthetic history, then exits.

Run as `python -m checkers.archive_training` by `class_archive.build`, with the environment that
makes its JVM write the archive of every class it loaded when it exits.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from checkers.check import check_run
from checkers.class_archive import BUILD_TIMEOUT_S
from checkers.session import stop_spark
from contract.synthetic_history import ANOMALIES, generate

TRAINING_EVENTS = 20_000
TRAINING_RATE = 0.01  # per write and anomaly kind: every kind occurs, so every checker path runs


TINY_EVENTS = 300
TINY_RATE = 0.05


def train() -> None:
    """Check a small and a tiny synthetic history (whose checks evaluate expressions instead of
    compiling them: other classes), each twice, then let the JVM exit (and dump)."""
    with tempfile.TemporaryDirectory(prefix="kchaos-archive-") as tmp:
        histories = (("tiny", TINY_EVENTS, TINY_RATE), ("small", TRAINING_EVENTS, TRAINING_RATE))
        for name, events, rate in histories:
            run_dir = Path(tmp) / name
            generate(run_dir, events, seed=1, rates=dict.fromkeys(ANOMALIES, rate))
            check_run(run_dir)  # converts the history: JSON reader, per-value table, Parquet writer
            check_run(run_dir)  # reads the Parquet cache
        stop_spark(wait_s=BUILD_TIMEOUT_S)


if __name__ == "__main__":
    train()
