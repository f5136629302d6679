"""The books of the lossy disk: what every file and directory held when it was last synced, kept
while every change goes through to the backing directory, so that `drop` can take back what was
never synced, as a power loss would.

Files. Per file (by its inode in the backing directory, so a rename does not lose its books): its
size at its last fsync, the synced bytes of every page it has overwritten or cut off since (saved
before the change, once per page), and per changed page when it last changed and which bytes. An
append past the synced size saves nothing: a drop cuts the file back.

Directories. One journal of name changes (create, mkdir, unlink, rmdir, rename) in the order they
happened. What an unlink, rmdir or rename removes or replaces is moved into a stash directory, not
deleted, until its change is synced. An fsync of a directory syncs every change up to the last one
that touched it: a journal commits in order, as ext4's does, so undoing the unsynced rest in
reverse always finds each name where its change left it.

`drop` undoes the unsynced journal in reverse, then returns each changed file to its synced size
and bytes. Options a real disk has: keep a seeded random prefix of each file's unsynced bytes (a
torn write), or keep what the operating system would have written back by then (pages, and
directory changes, older than `written_back_older_than_s`; Linux writes a dirty page back once it
is `dirty_expire_centisecs` old, 30 s by default). A page's age is its last change, so a page that
changed again since is dropped whole, even the part an earlier write-back may have kept: the loss
is an upper bound for that page.

The backing directory's own durability does not matter (the host keeps its power), so an fsync
syncs the books only, never the host's disk.
"""

from __future__ import annotations

import os
import random
import shutil
import stat
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PAGE = 4096
ZERO_PAGE = bytes(PAGE)


@dataclass(slots=True)
class DirtyPage:
    """One page changed since its file was synced: when it last changed, and the file offsets of
    the first and one past the last byte changed in it."""

    changed_at: float
    low: int
    high: int


@dataclass
class FileBooks:
    """One file since its last fsync."""

    synced_size: int
    saved: dict[int, bytes] = field(default_factory=dict)
    """Page number -> the page's synced bytes (up to the synced size), saved before its first change."""
    dirty: dict[int, DirtyPage] = field(default_factory=dict)


@dataclass(frozen=True)
class NameChange:
    """One change of the directory tree, as paths relative to the backing directory."""

    kind: str
    """create, mkdir, unlink, rmdir or rename."""
    path: str
    directories: frozenset[int]
    """The inodes of the directories whose entries it changed (what an fsync of them syncs)."""
    changed_at: float
    target: str = ""
    """A rename's new path."""
    stash: str = ""
    """Where the entry an unlink or rmdir removed, or a rename replaced, waits in the stash."""

    def describe(self) -> str:
        return f"rename {self.path} -> {self.target}" if self.kind == "rename" else f"{self.kind} {self.path}"


@dataclass(frozen=True)
class FileLoss:
    """What a drop did to one file: bytes unsynced before it, and how many of them it dropped."""

    unsynced: int
    dropped: int

    def as_json(self) -> dict[str, int]:
        return {"unsynced": self.unsynced, "dropped": self.dropped}


@dataclass(frozen=True)
class Dropped:
    """What one drop undid: per file (its path after the drop, or before, for a file whose creation
    was undone) the bytes unsynced and dropped, and the directory changes undone, newest first."""

    files: dict[str, FileLoss]
    undone: list[str]
    touched: set[str] = field(default_factory=set)
    """Every path the drop changed, and the directories of the names it changed."""

    def as_json(self) -> dict[str, Any]:
        return {
            "files": {path: loss.as_json() for path, loss in sorted(self.files.items())},
            "undone": self.undone,
            "unsynced_bytes": sum(loss.unsynced for loss in self.files.values()),
            "dropped_bytes": sum(loss.dropped for loss in self.files.values()),
        }


def _pages(offset: int, end: int) -> range:
    return range(offset // PAGE, (end - 1) // PAGE + 1) if end > offset else range(0)


class Books:
    """The books of one backing directory. Every method that changes the backing directory takes
    the lock, so a drop sees each change whole."""

    def __init__(self, backing: Path, stash: Path, clock: Callable[[], float] = time.monotonic) -> None:
        self.backing = backing
        self.stash = stash
        self.clock = clock
        self.lock = threading.Lock()
        self.files: dict[int, FileBooks] = {}
        self.journal: list[NameChange] = []
        self._stashed = 0

    def real(self, path: str) -> str:
        """The backing path of `path` (relative, or absolute in the mount as FUSE gives it)."""
        return os.path.join(self.backing, path.lstrip("/"))

    # -- file data -------------------------------------------------------------------------------
    def _books(self, fd: int, inode: int) -> FileBooks:
        books = self.files.get(inode)
        if books is None:
            books = self.files[inode] = FileBooks(os.fstat(fd).st_size)
        return books

    def _save(self, fd: int, books: FileBooks, offset: int, end: int) -> None:
        """Save the synced bytes of the pages of [offset, end) not saved yet (only below the synced size)."""
        for page in _pages(offset, min(end, books.synced_size)):
            if page not in books.saved:
                start = page * PAGE
                content = os.pread(fd, min(PAGE, books.synced_size - start), start)
                books.saved[page] = ZERO_PAGE if content == ZERO_PAGE else content

    def _mark(self, books: FileBooks, offset: int, end: int) -> None:
        now = self.clock()
        for page in _pages(offset, end):
            low, high = max(offset, page * PAGE), min(end, (page + 1) * PAGE)
            dirty = books.dirty.get(page)
            if dirty is None:
                books.dirty[page] = DirtyPage(now, low, high)
            else:
                dirty.changed_at, dirty.low, dirty.high = now, min(dirty.low, low), max(dirty.high, high)

    def write(self, fd: int, inode: int, data: bytes, offset: int) -> int:
        with self.lock:
            books = self._books(fd, inode)
            end = offset + len(data)
            self._save(fd, books, offset, end)
            written = os.pwrite(fd, data, offset)
            self._mark(books, offset, offset + written)
            return written

    def truncate(self, fd: int, inode: int, length: int) -> None:
        with self.lock:
            books = self._books(fd, inode)
            size = os.fstat(fd).st_size
            if length < size:
                self._save(fd, books, length, size)
                self._mark(books, length, size)
            # A file made longer gains no data, only zeros (Kafka preallocates its indexes so): a
            # drop cuts it back to its synced size without counting them as lost bytes.
            os.ftruncate(fd, length)

    def file_synced(self, inode: int) -> None:
        """fsync or fdatasync of a file: its data and size are on disk now."""
        with self.lock:
            self.files.pop(inode, None)

    # -- directories -----------------------------------------------------------------------------
    def _inode(self, path: str) -> int:
        return os.lstat(self.real(path)).st_ino

    def _parent(self, path: str) -> int:
        return self._inode(os.path.dirname(path.rstrip("/")) or "/")

    def _record(self, kind: str, path: str, directories: set[int], target: str = "", stash: str = "") -> None:
        self.journal.append(
            NameChange(
                kind, path.lstrip("/"), frozenset(directories), self.clock(), target.lstrip("/"), stash
            )
        )

    def _stash(self, path: str) -> str:
        self._stashed += 1
        name = f"{self._stashed:09d}"
        os.rename(self.real(path), self.stash / name)
        return name

    def created(self, path: str, kind: str = "create") -> None:
        """`path` was just created (a file, symlink or node: `create`; a directory: `mkdir`)."""
        with self.lock:
            self._record(kind, path, {self._parent(path)})
            self.files.pop(self._inode(path), None)  # an earlier file's books, if the inode is reused

    def create_file(self, path: str, flags: int, mode: int) -> tuple[int, bool]:
        """Open `path` with O_CREAT: (fd, whether it was created), the creation recorded."""
        with self.lock:
            try:
                fd = os.open(self.real(path), flags | os.O_CREAT | os.O_EXCL, mode)
            except FileExistsError:
                if flags & os.O_EXCL:
                    raise
                return os.open(self.real(path), flags & ~os.O_CREAT), False
            self._record("create", path, {self._parent(path)})
            # Synced, a new file is empty; and books of an earlier file with this inode are stale.
            self.files[os.fstat(fd).st_ino] = FileBooks(0)
            return fd, True

    def mkdir(self, path: str, mode: int) -> None:
        with self.lock:
            os.mkdir(self.real(path), mode)
            self._record("mkdir", path, {self._parent(path)})

    def remove(self, path: str, kind: str) -> None:
        """unlink or rmdir: the entry moves into the stash until the removal is synced."""
        with self.lock:
            real = self.real(path)
            if kind == "rmdir" and os.listdir(real):
                raise OSError(39, os.strerror(39), path)  # ENOTEMPTY
            parent = self._parent(path)
            self._record(kind, path, {parent}, stash=self._stash(path))

    def rename(self, old: str, new: str) -> None:
        with self.lock:
            directories = {self._parent(old), self._parent(new)}
            replaced = ""
            if os.path.lexists(self.real(new)):
                if os.path.isdir(self.real(old)) != os.path.isdir(self.real(new)):
                    # rename(2)'s own error: EISDIR or ENOTDIR, without touching either
                    os.rename(self.real(old), self.real(new))
                if (
                    os.path.isdir(self.real(new))
                    and not os.path.islink(self.real(new))
                    and os.listdir(self.real(new))
                ):
                    raise OSError(39, os.strerror(39), new)
                replaced = self._stash(new)
            os.rename(self.real(old), self.real(new))
            self._record("rename", old, directories, target=new, stash=replaced)

    def directory_synced(self, inode: int) -> None:
        """fsync of a directory: every change up to the last one that touched it is synced."""
        with self.lock:
            last = max(
                (i for i, change in enumerate(self.journal) if inode in change.directories), default=-1
            )
            self._commit(last + 1)

    def _commit(self, count: int) -> None:
        """The first `count` changes of the journal are synced: what they removed is gone for good."""
        for change in self.journal[:count]:
            if change.stash:
                self._delete_stashed(change.stash)
        del self.journal[:count]

    def _delete_stashed(self, name: str) -> None:
        where = self.stash / name
        if where.is_dir() and not where.is_symlink():
            shutil.rmtree(where)
        else:
            where.unlink(missing_ok=True)

    # -- the drop --------------------------------------------------------------------------------
    def unsynced(self) -> dict[str, Any]:
        """What a drop would take now: per file its unsynced bytes, and the unsynced name changes."""
        with self.lock:
            paths = self._paths()
            files = {
                paths.get(inode, f"(inode {inode}, unlinked)"): sum(
                    self._extent(books, self._size(paths.get(inode)))
                )
                for inode, books in self.files.items()
            }
            return {
                "files": {path: size for path, size in sorted(files.items()) if size},
                "changes": [c.describe() for c in self.journal],
            }

    def _size(self, path: str | None) -> int:
        return os.lstat(self.real(path)).st_size if path is not None else 0

    @staticmethod
    def _extent(books: FileBooks, size: int) -> Iterator[int]:
        limit = max(size, books.synced_size)
        for dirty in books.dirty.values():
            yield max(0, min(dirty.high, limit) - dirty.low)

    def drop(self, torn_seed: int | None = None, written_back_older_than_s: float | None = None) -> Dropped:
        """Undo everything not synced; see the module's docstring for the options."""
        with self.lock:
            cutoff = None if written_back_older_than_s is None else self.clock() - written_back_older_than_s
            if cutoff is not None:
                self._commit(sum(1 for change in self.journal if change.changed_at <= cutoff))
            files: dict[str, FileLoss] = {}
            undone = []
            touched: set[str] = set()
            for change in reversed(self.journal):
                lost = self._undo(change)
                if lost is not None:
                    files[change.path] = lost
                undone.append(change.describe())
                for name in (change.path, change.target):
                    touched |= {name, os.path.dirname(name)} if name else set()
            self.journal.clear()
            paths = self._paths()
            for inode, books in self.files.items():
                path = paths.get(inode)
                if path is not None:
                    rng = random.Random(f"{torn_seed}:{path}") if torn_seed is not None else None
                    files[path] = self._restore(path, books, cutoff, rng)
            self.files.clear()
            return Dropped(files, undone, touched | set(files))

    def _undo(self, change: NameChange) -> FileLoss | None:
        """Undo one name change; for an undone creation of a file, its unsynced bytes (all dropped:
        what it had synced is gone with its name too, which `undone` says)."""
        real = self.real(change.path)
        if change.kind == "create":
            found = os.lstat(real)
            books = self.files.pop(found.st_ino, None)
            os.unlink(real)
            unsynced = sum(self._extent(books, found.st_size)) if books is not None else 0
            return FileLoss(unsynced, unsynced)
        if change.kind == "mkdir":
            os.rmdir(real)
        elif change.kind in ("unlink", "rmdir"):
            os.rename(self.stash / change.stash, real)
        elif change.kind == "rename":
            os.rename(self.real(change.target), real)
            if change.stash:
                os.rename(self.stash / change.stash, self.real(change.target))
        return None

    def _paths(self) -> dict[int, str]:
        """Inode -> path (relative) of every file in the backing directory that has books."""
        found: dict[int, str] = {}
        for folder, _, names in os.walk(self.backing):
            for name in names:
                path = os.path.join(folder, name)
                inode = os.lstat(path).st_ino
                if inode in self.files and stat.S_ISREG(os.lstat(path).st_mode):
                    found[inode] = os.path.relpath(path, self.backing)
        return found

    def _restore(
        self, path: str, books: FileBooks, cutoff: float | None, rng: random.Random | None
    ) -> FileLoss:
        """Return one file to its synced size and bytes, keeping what the options keep."""
        fd = os.open(self.real(path), os.O_RDWR)
        try:
            size = os.fstat(fd).st_size
            limit = max(size, books.synced_size)
            spans = sorted(
                (page, d.low, min(d.high, limit), d.changed_at)
                for page, d in books.dirty.items()
                if d.low < min(d.high, limit)
            )
            kept: list[tuple[int, int, int, int]] = []
            """(page, first changed byte, where the part kept ends, one past the last changed byte)"""
            lost = []
            for page, low, high, changed_at in spans:
                if cutoff is not None and changed_at <= cutoff:
                    kept.append((page, low, high, high))  # written back by the operating system
                else:
                    lost.append((page, low, high))
            keep = rng.randint(0, sum(high - low for _, low, high in lost)) if rng is not None else 0
            for page, low, high in lost:
                taken = min(keep, high - low)
                keep -= taken
                kept.append((page, low, low + taken, high))
            unsynced = sum(high - low for _, low, _, high in kept)
            dropped = sum(high - until for _, _, until, high in kept)
            # Every changed page written back: the size as it is. Else the synced size, or past it
            # as far as a kept part of the file reaches.
            new_size = max(
                [books.synced_size] + [until for _, low, until, _ in kept if low < until and low < size]
            )
            if (kept and not lost) or (dropped == 0 and size == new_size):
                return FileLoss(unsynced, 0)
            os.ftruncate(fd, new_size)
            for page, _, until, high in kept:
                start, end = until, min(high, new_size)
                if start >= end:
                    continue
                synced_end = min(end, books.synced_size)
                if start < synced_end and page in books.saved:
                    base = page * PAGE
                    os.pwrite(fd, books.saved[page][start - base : synced_end - base], start)
                hole = max(start, books.synced_size)
                if hole < end:
                    os.pwrite(fd, bytes(end - hole), hole)  # a dropped page between kept ones: zeros
            return FileLoss(unsynced, dropped)
        finally:
            os.close(fd)
