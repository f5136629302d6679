"""A crash is a kafka-chaos bug, never a verdict: its traceback goes to a log, not to the terminal.

The log is RUN/harness.log when the command works in a run directory (it says so through
`note_run_dir`), else `harness.log` in the user's cache directory; the CLI prints one line naming it.
"""

from __future__ import annotations

import datetime
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from contract.history import HARNESS_LOG, RUN_JSON
from contract.userdirs import user_cache_dir

_run_dir: Path | None = None


def note_run_dir(root: Path | None) -> None:
    """The run directory the current command works in (None: none, or no longer)."""
    global _run_dir
    _run_dir = root


def log_crash(exc: BaseException, argv: Sequence[str]) -> Path | None:
    """Append `exc`'s traceback to the run's harness.log, else to the cache directory's; return the
    file, or None when neither could be written (the traceback then goes to stderr)."""
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    text = f"{stamp} CRASH kchaos {' '.join(argv)}\n" + "".join(traceback.format_exception(exc)) + "\n"
    for path in [*_run_log(), user_cache_dir() / HARNESS_LOG]:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8", errors="backslashreplace") as log:
                log.write(text)
        except OSError:
            continue
        return path
    sys.stderr.write(text)
    return None


def _run_log() -> list[Path]:
    """RUN/harness.log, if the noted directory is a run directory (not any directory a user named)."""
    if _run_dir is None:
        return []
    try:
        is_run = any((_run_dir / name).is_file() for name in (RUN_JSON, HARNESS_LOG))
    except OSError:
        return []
    return [_run_dir / HARNESS_LOG] if is_run else []
