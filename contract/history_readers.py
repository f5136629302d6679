"""Reading a run directory (HISTORY_FORMAT.md, format 1): run.json and the small history files,
read strictly and checked for the fields readers use (`contract.history_fields`), with HistoryError
naming the file, line and field of anything unusable. Spark reads the large files (`checkers.io`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from contract import strictjson
from contract.errors import HistoryError
from contract.history import (
    CLIENT,
    CLUSTER,
    CONSUMES,
    FAULTS,
    KNOWN_FORMATS,
    REPLICAS,
    RUN_JSON,
    TRANSACTIONS,
)
from contract.history_fields import (
    check_client_line,
    check_cluster_sample,
    check_consume_line,
    check_fault_event,
    check_replica_line,
    check_transaction_line,
    validate_run_json,
)
from contract.limits import brief


def load_run_json(root: Path) -> dict[str, Any]:
    """Read and validate run.json: a known format, and every field a reader uses (`history_fields`)."""
    path = root / RUN_JSON
    if not root.is_dir():
        raise HistoryError("not a directory" if root.exists() else "run directory does not exist", str(root))
    require_file(path, "missing run.json (every run directory has one)")
    run = read_json_object(path)
    fmt = run.get("format")
    if fmt not in KNOWN_FORMATS or isinstance(fmt, bool):
        known = ", ".join(str(f) for f in KNOWN_FORMATS)
        raise HistoryError(f"unknown format {brief(fmt)}; this kafka-chaos reads format {known}", str(path))
    validate_run_json(run, path)
    return run


def read_json_object(path: Path) -> dict[str, Any]:
    """A whole-file JSON object (run.json, result.json), read strictly (`contract.strictjson`)."""
    value = strictjson.read_file(path)
    if not isinstance(value, dict):
        raise HistoryError("expected a JSON object", str(path), 1)
    return value


def require_file(path: Path, missing: str) -> None:
    """A HistoryError unless `path` is a regular file: `missing` when nothing is there, else what is."""
    if path.is_file():
        return
    if not path.exists():
        raise HistoryError(missing, str(path))
    found = "a directory" if path.is_dir() else "a special file (FIFO, socket or device)"
    raise HistoryError(f"expected a regular file, found {found}", str(path))


def iter_jsonl(path: Path, *, required: bool = True) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each line of a small JSONL file, read strictly.

    A missing optional file yields nothing. A last line without its newline is a write cut short
    by a crash: it is skipped only if it does not parse, as the format promises a readable prefix.
    """
    if not path.is_file():
        if path.exists():
            require_file(path, "")
        if required:
            raise HistoryError("missing history file", str(path))
        return
    for number, raw in strictjson.iter_lines(path):
        if not raw.strip():
            continue
        if not raw.endswith(b"\n") and not _parses(raw):
            return  # torn final line of a run that was killed mid-write
        obj = strictjson.decode(raw, path, number)
        if not isinstance(obj, dict):
            raise HistoryError("expected a JSON object", str(path), number)
        yield number, obj


def _parses(raw: bytes) -> bool:
    try:
        json.loads(raw)
    except (ValueError, RecursionError):
        return False
    return True


def _checked_lines(
    root: Path, name: str, check: Callable[[dict[str, Any], Path, int], None]
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, object) of an optional history file, each checked for the fields readers use."""
    for line, obj in iter_jsonl(root / name, required=False):
        check(obj, root / name, line)
        yield line, obj


def iter_fault_events(root: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, event) of history/faults.jsonl (optional), each checked for the fields readers use."""
    return _checked_lines(root, FAULTS, check_fault_event)


def iter_cluster_samples(root: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, sample) of history/cluster.jsonl (optional), each checked for the fields readers use."""
    return _checked_lines(root, CLUSTER, check_cluster_sample)


def iter_replica_lines(root: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, replica line) of history/replicas.jsonl (optional), each checked for the fields readers use."""
    return _checked_lines(root, REPLICAS, check_replica_line)


def iter_client_lines(root: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, client log line) of history/client.jsonl (optional), each checked for the fields readers use."""
    return _checked_lines(root, CLIENT, check_client_line)


def iter_consume_lines(root: Path, run: Mapping[str, Any]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, event) of history/consumes.jsonl (optional), each checked for the fields readers use,
    and each commit outcome for its invoke: after one, since the member (re)started, and once."""
    path = root / CONSUMES
    topics = {str(t.get("name")) for t in run.get("topics") or [] if isinstance(t, dict)}
    groups = {str(g.get("name")) for g in run.get("groups") or [] if isinstance(g, dict)}
    if groups and not path.exists():  # made with writes.jsonl when the run has groups
        names = ", ".join(sorted(groups))
        raise HistoryError(f"missing history file (run.json declares consumer groups: {names})", str(path))
    pending: dict[str, set[int]] = {}  # per member: commit ids invoked and not yet completed
    for line, event in iter_jsonl(path, required=False):
        check_consume_line(event, path, line, topics, groups)
        kind, process = event["type"], event["process"]
        if kind == "start":
            pending[process] = set()
        elif kind == "commit":
            invoked = pending.setdefault(process, set())
            if event["phase"] == "invoke":
                invoked.add(event["commit_id"])
            elif event["commit_id"] in invoked:
                invoked.discard(event["commit_id"])
            else:
                raise HistoryError(
                    f"commit {event['commit_id']} of {process} ends ({event['phase']}) without an "
                    "invoke of its own since the member started",
                    str(path),
                    line,
                )
        yield line, event


def iter_transaction_lines(root: Path, run: Mapping[str, Any]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, step) of history/transactions.jsonl (optional), each checked for the fields readers
    use, each completion for its invoke (of the same step of the same transaction, once), and each
    step of a transaction for its `begin` before it."""
    path = root / TRANSACTIONS
    topics = {str(t.get("name")) for t in run.get("topics") or [] if isinstance(t, dict)}
    begun: set[tuple[str, Any]] = set()
    pending: set[tuple[str, str, int | None]] = set()  # (process, step, txn) invoked, not completed
    for line, event in iter_jsonl(path, required=False):
        check_transaction_line(event, path, line, topics)
        kind, process, txn = event["type"], event["process"], event.get("txn")
        if kind == "begin":
            begun.add((process, txn))
            continue
        if kind != "init" and (process, txn) not in begun:
            raise HistoryError(f"{kind} of transaction {txn} of {process} before its begin", str(path), line)
        key = (process, kind, txn)
        if event["phase"] == "invoke":
            pending.add(key)
        elif key in pending:
            pending.discard(key)
        else:
            what = f"{kind} of transaction {txn}" if kind != "init" else "init"
            raise HistoryError(
                f"{what} of {process} ends ({event['phase']}) without an invoke of its own",
                str(path),
                line,
            )
        yield line, event
