"""What a check makes in a run directory for itself and for later checks (the Parquet cache, the
whole-lines copy of `--prefix`): built in a directory of its own, then published whole by one
rename under a name that says what it was made from.

Checks of one run directory may run at the same time (a CI job re-checking while someone makes a
report, enter pressed twice). None of them ever writes where another reads: each builds under a
`private_name`; the first to publish a name wins, and the others read what it published (their
own build, of the same bytes, is deleted). What a name holds is checked after publishing, and
what is stale (made from other bytes, an older layout, a build of a check that was killed) is
deleted without disturbing a check at work.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from contract.errors import HistoryError
from contract.history import abandoned, discard_dir, fresh_dir, private_name, publish_dir, remove_dir


@contextmanager
def building(run_dir: Path, parent: str) -> Iterator[str]:
    """A new, empty directory under RUN_DIR/PARENT that is this check's alone (its name, relative
    to RUN_DIR), deleted as the block ends unless it was published meanwhile."""
    name = private_name(parent, "build")
    fresh_dir(run_dir, name)
    try:
        yield name
    finally:
        remove_dir(run_dir, name)  # nothing is there any more once it is published


def publish(run_dir: Path, built: str, name: str, whole: Callable[[Path], bool]) -> None:
    """Publish the directory `built` as `name` (both relative to RUN_DIR, in one directory) unless
    another check published it first; `whole` says whether a directory holds what `name` stands
    for. One found at `name` that does not (made by an older kafka-chaos, or by hand) is replaced.
    Afterwards `name` must hold it, or the check stops: it cannot tell what it would read."""
    for _ in range(2):
        if publish_dir(run_dir, built, name) or whole(run_dir / name):
            break
        discard_dir(run_dir, name)
    if not whole(run_dir / name):
        raise HistoryError(
            "changed as this check published it (another process writes there): check again",
            str(run_dir / name),
        )


def remove_stale(run_dir: Path, parent: str, keep: str) -> None:
    """Delete all under RUN_DIR/PARENT but `keep` (a name relative to RUN_DIR) and what checks at
    work are building or deleting there (`contract.history.private_name`) now."""
    where = run_dir / parent
    if not where.is_dir():
        return
    for entry in sorted(os.listdir(where)):
        if entry == PurePosixPath(keep).name or (entry.startswith(".") and not abandoned(entry)):
            continue
        discard_dir(run_dir, f"{parent}/{entry}")
