"""What a check scans and judges: every history file of the run scanned byte by byte (`contract.history_scan`)
before a parser reads it, and a torn tail refused, or cut off when the user asks for the prefix.

Without `prefix`, a file whose end is torn (a run cut short by a crash or power loss) is one
HistoryError naming its line and the option. With it, the check reads a copy of the run directory
under check/prefix/<digest of what it holds>/ in which each torn file holds its whole lines only
(the others are hard links: nothing is copied), so that every reader, pyarrow's and Spark's alike,
sees the same lines; the run directory itself is never changed. The copy is built in a directory of
the check's own and published whole (`checkers.io.published`), as the cache is. result.json
records what was judged of each file.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checkers.io.published import building, publish, remove_stale
from contract.errors import HistoryError
from contract.history import (
    CLIENT,
    CLUSTER,
    CONSUMES,
    FAULTS,
    NODE_LOGS,
    READS,
    REPLICAS,
    RUN_JSON,
    TRANSACTIONS,
    WRITES,
)
from contract.history_readers import load_run_json, require_file
from contract.history_scan import FileScan, scan

HISTORY_FILES = (WRITES, READS, CONSUMES, TRANSACTIONS, FAULTS, CLUSTER, CLIENT, REPLICAS)
"""Every JSON Lines file of a run directory, in the order a torn one is named."""
REQUIRED = (WRITES, READS)
PREFIX_DIR = "check/prefix"
"""Where the whole-lines copies of a run with a torn file are judged from, one per content."""


@dataclass(frozen=True)
class ScannedRun:
    """The run directory a check reads (`root`: the run's own, or its whole-lines copy) and what the
    scan found of each history file there is."""

    root: Path
    files: Mapping[str, FileScan]
    prefix: bool
    synced: Mapping[str, int]
    """run.json's `synced`: bytes of each file the harness had synced to disk (none before it)."""

    def digests(self) -> dict[str, str]:
        """SHA-256 of each file as scanned: what a cache made from them keys on."""
        return {name: found.sha256 for name, found in self.files.items()}

    def recorded(self) -> dict[str, Any]:
        """result.json's `history_files` (RESULT_FORMAT.md)."""
        return {
            name: {**found.recorded(), "judged_lines": found.lines, "synced_bytes": self.synced.get(name)}
            for name, found in self.files.items()
        }


def scan_run(run_dir: Path, *, prefix: bool = False) -> ScannedRun:
    """Scan the run's history files; the first torn one is refused unless `prefix` (see module)."""
    run = load_run_json(run_dir)  # a run directory at all, before its files are named
    for name in REQUIRED:
        require_file(run_dir / name, "missing history file")
    present = [name for name in HISTORY_FILES if (run_dir / name).exists()]
    for name in present:
        require_file(run_dir / name, "")
    with ThreadPoolExecutor(max_workers=len(present)) as pool:  # hashlib releases the GIL
        files = dict(zip(present, pool.map(lambda name: scan(run_dir / name), present), strict=True))
    synced: dict[str, int] = dict(run.get("synced") or {})
    for name, found in files.items():
        if found.bytes < synced.get(name, 0):
            raise HistoryError(
                f"{found.bytes:,} bytes, but run.json says the harness had synced {synced[name]:,} to "
                "disk: synced events were lost (a file system that broke its promise, or a file cut "
                "after the run)",
                str(found.path),
            )
    torn = [found for found in files.values() if found.torn is not None]
    if not torn:
        return ScannedRun(run_dir, files, prefix, synced)
    if not prefix:
        first = torn[0]
        assert first.torn is not None
        raise HistoryError(
            f"{first.torn.describe()}; `kchaos check --prefix` judges its {first.lines:,} whole lines "
            "before it (and says so in the result and the report)",
            str(first.path),
            first.torn.line,
        )
    return ScannedRun(_whole_lines_copy(run_dir, files), files, prefix, synced)


def _whole_lines_copy(run_dir: Path, files: Mapping[str, FileScan]) -> Path:
    """RUN/check/prefix/<digest>: run.json, the broker logs and each history file as hard links
    (copies where the file system has none), a torn file's whole lines copied; made once for what
    the files and run.json hold (the digest), and published whole."""
    held = {name: [found.sha256, found.whole_bytes] for name, found in files.items()}
    held[RUN_JSON] = [hashlib.sha256((run_dir / RUN_JSON).read_bytes()).hexdigest(), 0]
    name = f"{PREFIX_DIR}/{hashlib.sha256(json.dumps(held, sort_keys=True).encode()).hexdigest()[:16]}"

    def whole(root: Path) -> bool:
        """Every file is there at the size it is copied at (the broker logs are not judged)."""
        try:
            sizes = {file: (root / file).stat().st_size for file in files}
        except OSError:
            return False
        return (root / RUN_JSON).is_file() and sizes == {f: found.whole_bytes for f, found in files.items()}

    if not whole(run_dir / name):
        with building(run_dir, PREFIX_DIR) as built:
            _copy(run_dir, files, run_dir / built)
            publish(run_dir, built, name, whole)
    remove_stale(run_dir, PREFIX_DIR, name)
    return run_dir / name


def _copy(run_dir: Path, files: Mapping[str, FileScan], root: Path) -> None:
    """`_whole_lines_copy`'s files, into `root`."""
    _link(run_dir / RUN_JSON, root / RUN_JSON)
    for name, found in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if found.torn is None:
            _link(found.path, target)
            continue
        with found.path.open("rb") as source, target.open("wb") as copy:
            left = found.whole_bytes
            while left and (chunk := source.read(min(left, 16 << 20))):
                copy.write(chunk)
                left -= len(chunk)
    if (run_dir / NODE_LOGS).is_dir():
        shutil.copytree(run_dir / NODE_LOGS, root / NODE_LOGS, copy_function=_link, symlinks=True)


def _link(source: str | Path, target: str | Path) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)
