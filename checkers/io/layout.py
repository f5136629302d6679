"""The run directory validated in Python before Spark starts: run.json and the small history files."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checkers.io.sources import SOURCES
from contract.broker_logs import LogEvent, read_broker_logs
from contract.errors import HistoryError
from contract.events import FaultWindow, fault_windows
from contract.history import CONSUMES, FAULTS, NODE_LOGS, REPLICAS, RESULT, TRANSACTIONS
from contract.history_readers import (
    iter_client_lines,
    iter_cluster_samples,
    iter_consume_lines,
    iter_fault_events,
    iter_replica_lines,
    iter_transaction_lines,
    load_run_json,
    require_file,
)

SPARK_GLOB_CHARACTERS = "[]{}*?\\"
"""Characters that Spark's file sources read as a glob pattern in a path, with no way to quote them."""


@dataclass(frozen=True)
class Layout:
    """What `check_layout` read and validated: run.json and the small history files."""

    run: dict[str, Any]
    faults: list[FaultWindow]
    fault_events: int
    cluster: list[dict[str, Any]]
    client_log: list[dict[str, Any]]
    replica_states: list[dict[str, Any]] | None
    """None without replicas.jsonl."""
    broker_log: list[LogEvent]
    consume_events: int | None = None
    """Valid lines of consumes.jsonl; None without the file."""
    transaction_steps: int | None = None
    """Valid lines of transactions.jsonl; None without the file."""


def check_layout(run_dir: Path) -> Layout:
    """Fail fast, before Spark starts, on a missing, unknown-format or invalid run.json,
    faults.jsonl, cluster.jsonl or client.jsonl, a missing history file, or a run directory Spark
    could not name or the check could not write its results in."""
    run = load_run_json(run_dir)
    if found := sorted(set(SPARK_GLOB_CHARACTERS) & set(str(run_dir.resolve()))):
        raise HistoryError(
            f"Spark reads {' '.join(found)} in a path as a glob pattern: move or rename the run directory",
            str(run_dir),
        )
    for source in SOURCES:
        require_file(run_dir / source.name, "missing history file")
    check_dir = run_dir / RESULT
    for where in (run_dir, check_dir.parent):  # the check writes its cache and result.json there
        if where.exists() and not os.access(where, os.W_OK | os.X_OK):
            raise HistoryError("this user cannot write in it (a check writes check/ there)", str(where))
    fault_events = list(iter_fault_events(run_dir))
    faults = fault_windows(fault_events, str(run_dir / FAULTS))
    cluster = [sample for _, sample in iter_cluster_samples(run_dir)]
    client_log = [line for _, line in iter_client_lines(run_dir)]
    states = [e for _, e in iter_replica_lines(run_dir) if e["type"] == "replica"]
    replica_states = states if (run_dir / REPLICAS).is_file() else None
    broker_log = read_broker_logs(run_dir / NODE_LOGS)
    consume_events = sum(1 for _ in iter_consume_lines(run_dir, run))
    transaction_steps = sum(1 for _ in iter_transaction_lines(run_dir, run))
    return Layout(
        run,
        faults,
        len(fault_events),
        cluster,
        client_log,
        replica_states,
        broker_log,
        consume_events if (run_dir / CONSUMES).is_file() else None,
        transaction_steps if (run_dir / TRANSACTIONS).is_file() else None,
    )


def history_bytes(run_dir: Path) -> int:
    """Size of writes.jsonl and reads.jsonl together (what a check has to read)."""
    return sum((run_dir / source.name).stat().st_size for source in SOURCES)
