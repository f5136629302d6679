"""The run directory of HISTORY_FORMAT.md (format 1): layout, the run clock, and writing.

This module is the one place that knows file names and the format number; the harness writes
through it, and `contract.history_readers` reads run.json and the small files by its names.

Run directories travel (attached to tickets, downloaded from CI), so what is in one is data: every
file kafka-chaos writes inside a run directory goes through `write_atomic`, `open_append`,
`fresh_dir`, `publish_dir` or `discard_dir`, which refuse a symbolic link below the run directory
(at the file, or at a directory on the way) with a HistoryError naming it, so a link can never make
a write land outside it. (`fresh_dir` deletes what is at its name anyway: a link there is deleted as
a link.)
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import re
import shutil
import socket
import stat
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

import orjson

from contract.errors import HistoryError
from contract.history_fields import ACKS_MODES as ACKS_MODES

_log = logging.getLogger(__name__)

FORMAT = 1
KNOWN_FORMATS = (FORMAT,)

RUN_JSON = "run.json"
WRITES = "history/writes.jsonl"
READS = "history/reads.jsonl"
FAULTS = "history/faults.jsonl"
CLUSTER = "history/cluster.jsonl"
CLIENT = "history/client.jsonl"
REPLICAS = "history/replicas.jsonl"
CONSUMES = "history/consumes.jsonl"
TRANSACTIONS = "history/transactions.jsonl"
NODE_LOGS = "logs"
"""RUN/logs/<node>.log: each container's output, and RUN/logs/kafka-N/: each broker's log files."""
RESULT = "check/result.json"
EXPECTATIONS = "check/expectations.json"
CHECK_CACHE = "check/parquet"
REPORT = "report/index.html"
JUNIT = "report/junit.xml"
SUMMARY = "report/summary.json"
HARNESS_LOG = "harness.log"
SCENARIO = "scenario.yaml"
MAX_SLUG = 64  # of a run id's name part: run ids name directories and containers


class RunClock:
    """Nanoseconds since the run started, on one monotonic clock shared by every history file."""

    def __init__(self) -> None:
        self.origin_ns = time.monotonic_ns()  # run time 0, on the clock of time.monotonic_ns()

    def now_ns(self) -> int:
        return time.monotonic_ns() - self.origin_ns

    def at_ns(self, monotonic_ns: int) -> int:
        """Convert a `time.monotonic_ns()` reading taken elsewhere to run time."""
        return monotonic_ns - self.origin_ns


SYNC_INTERVAL_S = 1.0
"""How often a run's history files are synced to disk while it runs (`RunDir.syncing`)."""


class HistoryWriter:
    """Append-only JSON Lines file; each event is written whole before `write` returns.

    The file is opened O_APPEND and never buffered in this process, so a crash of the harness
    leaves every event written so far on disk. A SIGKILL in the middle of a write can tear that
    one last line (Linux may cut a write short on a fatal signal): `kchaos check` names such a torn
    tail and, with `--prefix`, judges the whole lines before it. A power loss of the machine can
    lose what the page cache held: `sync` makes what was written durable (`RunDir` calls it at a
    bounded interval, at every fault boundary and at close). Thread-safe.
    """

    def __init__(
        self, path: Path, root: Path | None = None, after_write: Callable[[], None] | None = None
    ) -> None:
        """Append to `path`, which lies inside `root` (by default its own directory): see
        `open_append`. `after_write` is called after each event is written (a fault boundary)."""
        root = path.parent if root is None else root
        self.path = path
        self._fd: int | None = open_append(root, path.relative_to(root).as_posix())
        self._lock = threading.Lock()
        self._after_write = after_write
        self.synced_bytes = 0
        """The file's size when it was last synced: every byte before it is on disk."""

    def write(self, event: Mapping[str, Any]) -> None:
        self.write_bytes(orjson.dumps(event) + b"\n")  # orjson: ~10x cheaper than json.dumps
        if self._after_write is not None:
            self._after_write()

    def write_bytes(self, data: bytes) -> None:
        """Events already encoded as JSON lines, each ending in a newline, in one write(2), in order.

        For a producer's recorder, which formats its lines itself (see `harness.recorder`)."""
        with self._lock:
            if self._fd is None:
                raise HistoryError("history file is already closed", str(self.path))
            _write_all(self._fd, data)

    @property
    def closed(self) -> bool:
        return self._fd is None

    def sync(self) -> None:
        """Make every byte written so far durable (fdatasync) and note how many (`synced_bytes`).
        Writers go on meanwhile: the lock is held only to read the size."""
        with self._lock:
            if self._fd is None:
                return
            fd, size = self._fd, os.fstat(self._fd).st_size
            # Another descriptor of the same file, so that a close meanwhile cannot make this
            # sync's descriptor number another file's.
            fd = os.dup(fd)
        try:
            os.fdatasync(fd)
        except OSError as exc:
            raise HistoryError(f"cannot sync to disk: {exc.strerror or exc}", str(self.path)) from None
        finally:
            os.close(fd)
        self.synced_bytes = max(self.synced_bytes, size)

    def close(self) -> None:
        """Sync, then close."""
        self.sync()
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def __enter__(self) -> HistoryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RunDir:
    """A run directory on local disk, and the history writers it opened: it syncs them to disk
    and records in run.json (`synced`) how many bytes of each are synced, so a check can tell the
    events recorded and synced from those a power loss of this machine could have taken."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._writers: dict[str, HistoryWriter] = {}
        self._run: Mapping[str, Any] | None = None
        self._lock = threading.Lock()  # one sync or run.json write at a time

    def path(self, name: str) -> Path:
        return self.root / name

    def writer(self, name: str, *, boundary: bool = False) -> HistoryWriter:
        """A writer of the history file `name`; with `boundary`, each of its events is a fault
        boundary: the whole history is synced right after it is written."""
        writer = HistoryWriter(self.root / name, self.root, self.sync if boundary else None)
        with self._lock:
            self._writers[name] = writer
        return writer

    def write_run_json(self, run: Mapping[str, Any]) -> None:
        """Write run.json atomically (a reader never sees half of it), with `synced` as it stands."""
        with self._lock:
            self._run = {key: value for key, value in run.items() if key not in ("format", "synced")}
            self._write_run_json()

    def sync(self) -> None:
        """Sync every open history file to disk, then record the synced sizes in run.json."""
        with self._lock:
            for writer in self._writers.values():
                writer.sync()
            if self._run is not None:
                self._write_run_json()

    @contextlib.contextmanager
    def syncing(self, interval_s: float = SYNC_INTERVAL_S) -> Iterator[None]:
        """Sync the history every `interval_s` while the block runs, and once more as it ends."""
        done = threading.Event()

        def loop() -> None:
            while not done.wait(interval_s):
                try:
                    self.sync()
                except HistoryError as exc:  # the disk is full or failing: said once, the run goes on
                    _log.warning("%s; the history is no longer synced", exc)
                    return

        thread = threading.Thread(target=loop, name="kchaos-history-sync", daemon=True)
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join()
            self.sync()

    def _write_run_json(self) -> None:
        assert self._run is not None
        synced = {name: writer.synced_bytes for name, writer in sorted(self._writers.items())}
        run = {"format": FORMAT, **self._run, "synced": synced}
        write_atomic(self.root, RUN_JSON, json.dumps(run, indent=2) + "\n", durable=True)


_NO_FOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC


def write_atomic(root: Path, name: str, data: str | bytes, *, durable: bool = False) -> Path:
    """Replace ROOT/NAME whole (a temporary file renamed over it: a reader never sees half of it);
    `durable`: on disk before this returns (the file and its directory synced), a power loss after
    it keeps the new content.

    `name` is a relative path inside the run directory `root`. Missing directories are made; a
    symbolic link at NAME or on the way to it is refused (`_parent_dir`). Text is written as UTF-8,
    a lone surrogate as `?` (what a JSON `\\udce9` escape or a file name that is not UTF-8 gives).
    """
    payload = data.encode("utf-8", "replace") if isinstance(data, str) else data
    target = root / name
    with _parent_dir(root, name) as (dir_fd, base):
        _refuse_link(dir_fd, base, target)
        temporary = f".{base}.{os.urandom(4).hex()}.tmp"  # unique: two writers never share one
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NO_FOLLOW, 0o666, dir_fd=dir_fd)
            try:
                _write_all(fd, payload)
                if durable:
                    os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temporary, base, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            if durable:
                os.fsync(dir_fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=dir_fd)
            raise _write_error(target, exc) from None
    return target


def open_append(root: Path, name: str) -> int:
    """A descriptor of ROOT/NAME opened to append (made if missing), reached as `write_atomic` does."""
    with _parent_dir(root, name) as (dir_fd, base):
        try:
            return os.open(base, os.O_WRONLY | os.O_CREAT | os.O_APPEND | _NO_FOLLOW, 0o644, dir_fd=dir_fd)
        except OSError as exc:
            raise _write_error(root / name, exc) from None


def fresh_dir(root: Path, name: str) -> Path:
    """Make ROOT/NAME an empty directory, deleting what was there (a symbolic link is deleted as a
    link: nothing it points at is touched, nor is any link inside a deleted directory followed)."""
    return _replace_dir(root, name, make=True)


def remove_dir(root: Path, name: str) -> None:
    """Delete ROOT/NAME, if there, as `fresh_dir` deletes it."""
    _replace_dir(root, name, make=False)


def _replace_dir(root: Path, name: str, *, make: bool) -> Path:
    target = root / name
    with _parent_dir(root, name) as (dir_fd, base):
        try:
            with contextlib.suppress(FileNotFoundError):
                if stat.S_ISDIR(os.lstat(base, dir_fd=dir_fd).st_mode):
                    shutil.rmtree(base, dir_fd=dir_fd)  # fd-based: never follows a link inside
                else:
                    os.unlink(base, dir_fd=dir_fd)
            if make:
                os.mkdir(base, 0o777, dir_fd=dir_fd)
        except OSError as exc:
            raise _write_error(target, exc) from None
    return target


def publish_dir(root: Path, built: str, name: str) -> bool:
    """Rename the directory ROOT/BUILT to ROOT/NAME, in one step: a reader sees NAME whole or not
    at all. False, and BUILT left as it is, when a directory is at NAME already (another writer
    published it first). Both lie in one directory; a link at NAME is refused, as `write_atomic`
    refuses it."""
    if PurePosixPath(built).parent != PurePosixPath(name).parent:
        raise ValueError(f"{built!r} and {name!r} are not in one directory")
    with _parent_dir(root, name) as (dir_fd, base):
        _refuse_link(dir_fd, base, root / name)
        try:
            os.rename(PurePosixPath(built).name, base, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                return False
            raise _write_error(root / name, exc) from None
    return True


_HOST = re.sub(r"[^A-Za-z0-9_.]", "_", socket.gethostname()) or "host"


def private_name(parent: str, kind: str) -> str:
    """A name under PARENT that no other process, here or on another host, will use:
    `.KIND-<pid>-<random>-<host>` (`abandoned` reads it back)."""
    return f"{parent}/.{kind}-{os.getpid()}-{os.urandom(4).hex()}-{_HOST}"


def abandoned(name: str) -> bool:
    """Whether NAME (the last part of a path) is a `private_name` of a process of this host that has
    ended (killed while it built or deleted): one of a live process, or of another host, is not."""
    parts = name.split("-", 3)
    if len(parts) != 4 or not parts[0].startswith(".") or not parts[1].isdigit() or parts[3] != _HOST:
        return False
    try:
        os.kill(int(parts[1]), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError):  # a live process of another user, or no pid at all
        return False
    return False


def discard_dir(root: Path, name: str) -> None:
    """Delete ROOT/NAME, if there, where other processes may delete it at the same time: it is
    first renamed to a `private_name` (one of them gets it, the others find nothing), then deleted
    as `remove_dir` deletes it."""
    private = private_name(str(PurePosixPath(name).parent), "discarded")
    with _parent_dir(root, name) as (dir_fd, base):
        try:
            os.rename(base, PurePosixPath(private).name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise _write_error(root / name, exc) from None
    remove_dir(root, private)


def linked_below(root: Path, name: str) -> bool:
    """Whether ROOT/NAME, or a directory on the way to it below `root`, is a symbolic link."""
    path = root
    for part in PurePosixPath(name).parts:
        path = path / part
        if path.is_symlink():
            return True
    return False


@contextlib.contextmanager
def _parent_dir(root: Path, name: str) -> Iterator[tuple[int, str]]:
    """An open descriptor of the directory of ROOT/NAME, and NAME's last part.

    `root` itself may be a link (the user named it); below it every directory is opened with
    O_NOFOLLOW relative to the one before, and made if missing, so no link is crossed.
    """
    parts = PurePosixPath(name).parts
    if not parts or PurePosixPath(name).is_absolute() or {".", ".."} & set(parts):
        raise ValueError(f"{name!r} is not a relative path inside a run directory")
    *directories, base = parts
    try:
        root.mkdir(parents=True, exist_ok=True)
        dir_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise _write_error(root, exc) from None
    try:
        walked = root
        for part in directories:
            walked = walked / part
            try:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=dir_fd)
                child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | _NO_FOLLOW, dir_fd=dir_fd)
            except OSError as exc:
                raise _write_error(walked, exc) from None
            os.close(dir_fd)
            dir_fd = child
        yield dir_fd, base
    finally:
        os.close(dir_fd)


def _refuse_link(dir_fd: int, base: str, path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISLNK(os.lstat(base, dir_fd=dir_fd).st_mode):
            raise _link_refused(path)


def _link_refused(path: Path) -> HistoryError:
    return HistoryError(
        "is a symbolic link; kafka-chaos never writes through a link in a run directory (remove it)",
        str(path),
    )


def _write_error(path: Path, exc: OSError) -> HistoryError:
    """What went wrong writing `path`, in the user's terms: a link in the way, or the system's reason."""
    if path.is_symlink():
        return _link_refused(path)
    return HistoryError(f"cannot write: {exc.strerror or exc}", str(path))


def _write_all(fd: int, data: bytes) -> None:
    written = 0
    while written < len(data):  # write(2) may accept only part of a buffer
        written += os.write(fd, data[written:])


def new_run_id(name: str) -> str:
    """`YYYYmmdd-HHMMSS-<name>-<4 hex>`: sortable by start, unique across concurrent runs."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    # ASCII only: the id names Docker containers (harness.docker_env.RUN_ID_SHAPE).
    slug = "".join(c if (c.isascii() and c.isalnum()) or c == "-" else "-" for c in name.lower())
    slug = slug.strip("-")[:MAX_SLUG].strip("-") or "run"
    return f"{stamp}-{slug}-{os.urandom(2).hex()}"
