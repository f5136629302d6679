"""The run directory of HISTORY_FORMAT.md (format 1): layout, the run clock, writing and reading.

This module is the one place that knows file names and the format number; the harness writes
through it, and the checkers and reports read small files (run.json, faults, cluster) through it.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from harness import strictjson
from harness.errors import HistoryError
from harness.history_fields import ACKS_MODES as ACKS_MODES
from harness.history_fields import check_cluster_sample, check_fault_event, check_run
from harness.limits import brief

FORMAT = 1
KNOWN_FORMATS = (FORMAT,)

RUN_JSON = "run.json"
WRITES = "history/writes.jsonl"
READS = "history/reads.jsonl"
FAULTS = "history/faults.jsonl"
CLUSTER = "history/cluster.jsonl"
RESULT = "check/result.json"
REPORT = "report/index.html"
HARNESS_LOG = "harness.log"
MAX_SLUG = 64  # of a run id's name part: run ids name directories and containers

# The per-acks-mode counts of check/result.json, in HISTORY_FORMAT.md's order.
COUNT_KEYS = (
    "attempted",
    "acked",
    "failed",
    "indeterminate",
    "lost",
    "divergent",
    "duplicated",
    "phantom",
    "reordered",
)


class RunClock:
    """Nanoseconds since the run started, on one monotonic clock shared by every history file."""

    def __init__(self) -> None:
        self.origin_ns = time.monotonic_ns()  # run time 0, on the clock of time.monotonic_ns()

    def now_ns(self) -> int:
        return time.monotonic_ns() - self.origin_ns

    def at_ns(self, monotonic_ns: int) -> int:
        """Convert a `time.monotonic_ns()` reading taken elsewhere to run time."""
        return monotonic_ns - self.origin_ns


class HistoryWriter:
    """Append-only JSON Lines file; each event is written whole before `write` returns.

    The file is opened O_APPEND and never buffered in this process, so a crash of the harness
    leaves every event written so far on disk. A SIGKILL in the middle of a write can tear that
    one last line (Linux may cut a write short on a fatal signal); every reader skips a torn final
    line, as HISTORY_FORMAT.md's "readable prefix" allows. Thread-safe.
    """

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._lock = threading.Lock()

    def write(self, event: Mapping[str, Any]) -> None:
        self.write_bytes(orjson.dumps(event) + b"\n")  # orjson: ~10x cheaper than json.dumps

    def write_bytes(self, data: bytes) -> None:
        """Events already encoded as JSON lines, each ending in a newline, in one write(2), in order.

        For a producer's recorder, which formats its lines itself (see `harness.producer`)."""
        with self._lock:
            if self._fd is None:
                raise HistoryError("history file is already closed", str(self.path))
            written = os.write(self._fd, data)
            while written < len(data):  # write(2) may accept only part of a buffer
                written += os.write(self._fd, data[written:])

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def __enter__(self) -> HistoryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class RunDir:
    """A run directory on local disk."""

    root: Path

    def path(self, name: str) -> Path:
        return self.root / name

    def writer(self, name: str) -> HistoryWriter:
        return HistoryWriter(self.root / name)

    def write_run_json(self, run: Mapping[str, Any]) -> None:
        """Write run.json atomically (a reader never sees half of it)."""
        target = self.root / RUN_JSON
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".json.tmp")
        tmp.write_text(json.dumps({"format": FORMAT, **run}, indent=2) + "\n")
        os.replace(tmp, target)

    def load_run_json(self) -> dict[str, Any]:
        return load_run_json(self.root)


def load_run_json(root: Path) -> dict[str, Any]:
    """Read and validate run.json: a known format, and every field a reader uses (`history_fields`)."""
    path = root / RUN_JSON
    if not root.is_dir():
        raise HistoryError("not a directory" if root.exists() else "run directory does not exist", str(root))
    if not path.is_file():
        raise HistoryError("missing run.json (every run directory has one)", str(path))
    run = read_json_object(path)
    fmt = run.get("format")
    if fmt not in KNOWN_FORMATS or isinstance(fmt, bool):
        known = ", ".join(str(f) for f in KNOWN_FORMATS)
        raise HistoryError(f"unknown format {brief(fmt)}; this kafka-chaos reads format {known}", str(path))
    check_run(run, path)
    return run


def read_json_object(path: Path) -> dict[str, Any]:
    """A whole-file JSON object (run.json, result.json), read strictly (`harness.strictjson`)."""
    value = strictjson.read_file(path)
    if not isinstance(value, dict):
        raise HistoryError("expected a JSON object", str(path), 1)
    return value


def iter_jsonl(path: Path, *, required: bool = True) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each line of a small JSONL file, read strictly.

    A missing optional file yields nothing. A last line without its newline is a write cut short
    by a crash: it is skipped only if it does not parse, as the format promises a readable prefix.
    """
    if not path.is_file():
        if path.exists():
            raise HistoryError("not a regular file", str(path))
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


def iter_fault_events(root: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, event) of history/faults.jsonl (optional), each checked for the fields readers use."""
    for line, event in iter_jsonl(root / FAULTS, required=False):
        check_fault_event(event, root / FAULTS, line)
        yield line, event


def iter_cluster_samples(root: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, sample) of history/cluster.jsonl (optional), each checked for the fields readers use."""
    for line, sample in iter_jsonl(root / CLUSTER, required=False):
        check_cluster_sample(sample, root / CLUSTER, line)
        yield line, sample


def new_run_id(name: str) -> str:
    """`YYYYmmdd-HHMMSS-<name>-<4 hex>`: sortable by start, unique across concurrent runs."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    slug = "".join(c if (c.isascii() and c.isalnum()) or c == "-" else "-" for c in name.lower())
    slug = slug.strip("-")[:MAX_SLUG].strip("-") or "run"
    return f"{stamp}-{slug}-{os.urandom(2).hex()}"
