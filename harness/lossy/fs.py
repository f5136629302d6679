"""The FUSE operations of the lossy disk (mfusepy, libfuse 3's high-level API): every operation goes
through to the backing directory, and the books (`harness.lossy.undo`) learn what it changed.

File operations use the file handle only (libfuse's `nullpath_ok`: no path is computed for them,
and a file unlinked while open keeps working); the handle is the backing file's descriptor.

Mount settings that keep the kernel from hiding what the layer does: no writeback cache (every
write reaches the layer when the program makes it, so the books see it), no caching of names (a
drop renames, removes and brings back names behind the kernel's back), and `hard_remove` (libfuse
does not hide an open file it is asked to unlink under a `.fuse_hidden` name of its own). The
kernel keeps a file's attributes for libfuse's second, as on any FUSE mount (without it, every read
up to a file's end asks for its size again: a follower's fetch, a consumer's poll); a drop tells it
to forget those of every path it touched (`forget_cached`), and a file opened again has its pages
read afresh (`keep_cache` is off).

Disk faults (`DiskFaults`), served here because every write and fsync passes through: a full disk
(a write past a file's end, a create or a mkdir fails with ENOSPC; overwrites in place go on), a
failing fsync (EIO; nothing is synced), a slow fsync (a delay before each).
"""

from __future__ import annotations

import ctypes
import errno
import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import mfusepy

from harness.lossy.undo import Books

RENAME_NOREPLACE = 1
STAT_FIELDS = (
    "st_mode",
    "st_ino",
    "st_nlink",
    "st_uid",
    "st_gid",
    "st_size",
    "st_blocks",
    "st_blksize",
    "st_rdev",
)


@dataclass
class DiskFaults:
    """The disk faults in force (changed by the control socket while operations run)."""

    full: bool = False
    fsync_error: bool = False
    fsync_delay_s: float = 0.0
    counts: dict[str, int] = field(default_factory=dict)
    """How many operations each fault failed or delayed (`stats` shows them)."""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count(self, what: str) -> None:
        with self.lock:
            self.counts[what] = self.counts.get(what, 0) + 1

    def active(self) -> list[str]:
        """The faults in force, by name."""
        on = {"full": self.full, "fsync_error": self.fsync_error, "slow_fsync": self.fsync_delay_s > 0}
        return [name for name, active in on.items() if active]

    def describe(self) -> dict[str, Any]:
        return {
            "full": self.full,
            "fsync_error": self.fsync_error,
            "fsync_delay_s": self.fsync_delay_s,
            "counts": dict(self.counts),
        }


def _failure(code: int) -> mfusepy.FuseOSError:
    return mfusepy.FuseOSError(code)


def _attributes(st: os.stat_result) -> dict[str, int]:
    attributes = {name: getattr(st, name) for name in STAT_FIELDS}
    attributes.update(st_atime=st.st_atime_ns, st_mtime=st.st_mtime_ns, st_ctime=st.st_ctime_ns)
    return attributes


class LossyOperations(mfusepy.Operations):  # type: ignore[misc]
    """The operations libfuse calls; OSError from the backing directory goes back as its errno."""

    use_ns = True
    flag_nopath = True
    flag_nullpath_ok = True

    def __init__(self, books: Books, faults: DiskFaults) -> None:
        self.books = books
        self.faults = faults
        self.inodes: dict[int, int] = {}
        """File handle (the backing descriptor) -> the backing file's inode, for the books."""
        self._fuse = ctypes.c_void_p(None)
        """libfuse's `struct fuse`, known from `init` on."""

    def init_with_config(self, conn_info: Any, config: Any) -> None:
        if config is not None:
            config.entry_timeout = 0.0
            config.negative_timeout = 0.0
            config.hard_remove = 1
            config.nullpath_ok = 1
            config.use_ino = 1
        self._fuse = ctypes.c_void_p(mfusepy._libfuse.fuse_get_context().contents.fuse)

    def forget_cached(self, paths: Iterable[str]) -> None:
        """Have the kernel forget what it cached of each path (its attributes and pages); not while
        an operation waits for the books' lock (the kernel may wait for that operation)."""
        for path in paths:
            # -ENOENT when the kernel holds nothing of it: nothing to forget.
            mfusepy._libfuse.fuse_invalidate_path(self._fuse, ("/" + path.lstrip("/")).encode())

    # -- names -----------------------------------------------------------------------------------
    def getattr(self, path: str | None, fh: int | None = None) -> dict[str, int]:
        if fh is not None:
            return _attributes(os.fstat(fh))
        if path is None:
            raise _failure(errno.EBADF)
        return _attributes(os.lstat(self.books.real(path)))

    def readlink(self, path: str) -> str:
        return os.readlink(self.books.real(path))

    def _space(self) -> None:
        if self.faults.full:
            self.faults.count("enospc")
            raise _failure(errno.ENOSPC)

    def mknod(self, path: str, mode: int, dev: int) -> int:
        self._space()
        os.mknod(self.books.real(path), mode, dev)
        self.books.created(path)
        return 0

    def mkdir(self, path: str, mode: int) -> int:
        self._space()
        self.books.mkdir(path, mode)
        return 0

    def unlink(self, path: str) -> int:
        self.books.remove(path, "unlink")
        return 0

    def rmdir(self, path: str) -> int:
        self.books.remove(path, "rmdir")
        return 0

    def symlink(self, target: str, source: str) -> int:
        self._space()
        os.symlink(source, self.books.real(target))
        self.books.created(target)
        return 0

    def rename(self, old: str, new: str, flags: int = 0) -> int:
        if flags & ~RENAME_NOREPLACE:
            raise _failure(errno.EINVAL)  # RENAME_EXCHANGE and whiteouts: nothing here uses them
        if flags & RENAME_NOREPLACE and os.path.lexists(self.books.real(new)):
            raise _failure(errno.EEXIST)
        self.books.rename(old, new)
        return 0

    def link(self, target: str, source: str) -> int:
        raise _failure(errno.EPERM)  # hard links would give one inode two sets of names to undo

    def chmod(self, path: str | None, mode: int, fh: int | None = None) -> int:
        if path is None:
            raise _failure(errno.EBADF)
        os.chmod(self.books.real(path), mode)
        return 0

    def chown(self, path: str | None, uid: int, gid: int, fh: int | None = None) -> int:
        if path is None:
            raise _failure(errno.EBADF)
        os.lchown(self.books.real(path), uid, gid)
        return 0

    def utimens(self, path: str | None, times: tuple[int, int] | None = None) -> int:
        if path is None:
            raise _failure(errno.EBADF)
        if times is None:
            os.utime(self.books.real(path), follow_symlinks=False)
        else:
            os.utime(self.books.real(path), ns=times, follow_symlinks=False)
        return 0

    def statfs(self, path: str) -> dict[str, int]:
        st = os.statvfs(self.books.backing)
        found = {name: getattr(st, name) for name in dir(st) if name.startswith("f_")}
        if self.faults.full:
            found.update(f_bfree=0, f_bavail=0)
        return found

    # -- files -----------------------------------------------------------------------------------
    def _opened(self, fd: int) -> int:
        self.inodes[fd] = os.fstat(fd).st_ino
        return fd

    @staticmethod
    def _backing_flags(flags: int) -> int:
        # The kernel says where each write goes (it knows the file's size): an O_APPEND descriptor
        # would put it at the backing file's end whatever the offset, past the books' back. A
        # descriptor that writes reads too: the books save synced bytes before they are overwritten.
        flags &= ~(os.O_APPEND | os.O_TRUNC | os.O_CREAT | os.O_EXCL)
        return (flags & ~os.O_WRONLY) | os.O_RDWR if flags & os.O_WRONLY else flags

    def open(self, path: str, flags: int) -> int:
        fd = self._opened(os.open(self.books.real(path), self._backing_flags(flags)))
        if flags & os.O_TRUNC:
            self.truncate(None, 0, fd)
        return fd

    def create(self, path: str, mode: int, flags: int) -> int:
        if self.faults.full and not os.path.lexists(self.books.real(path)):
            self._space()
        fd, _ = self.books.create_file(path, self._backing_flags(flags) | (flags & os.O_EXCL), mode)
        fd = self._opened(fd)
        if flags & os.O_TRUNC:
            self.truncate(None, 0, fd)
        return fd

    def read(self, path: str | None, size: int, offset: int, fh: int) -> bytes:
        return os.pread(fh, size, offset)

    def write(self, path: str | None, data: bytes, offset: int, fh: int) -> int:
        if self.faults.full and offset + len(data) > os.fstat(fh).st_size:
            self._space()
        return self.books.write(fh, self.inodes[fh], data, offset)

    def truncate(self, path: str | None, length: int, fh: int | None = None) -> int:
        if fh is None:
            if path is None:
                raise _failure(errno.EBADF)
            fd = os.open(self.books.real(path), os.O_RDWR)
            try:
                self._truncate(fd, os.fstat(fd).st_ino, length)
            finally:
                os.close(fd)
        else:
            self._truncate(fh, self.inodes[fh], length)
        return 0

    def _truncate(self, fd: int, inode: int, length: int) -> None:
        if self.faults.full and length > os.fstat(fd).st_size:
            self._space()
        self.books.truncate(fd, inode, length)

    def flush(self, path: str | None, fh: int) -> int:
        return 0

    def release(self, path: str | None, fh: int) -> int:
        self.inodes.pop(fh, None)
        os.close(fh)
        return 0

    def _sync(self) -> None:
        if self.faults.fsync_delay_s:
            self.faults.count("slow_fsync")
            time.sleep(self.faults.fsync_delay_s)
        if self.faults.fsync_error:
            self.faults.count("fsync_eio")
            raise _failure(errno.EIO)

    def fsync(self, path: str | None, datasync: int, fh: int) -> int:
        self._sync()
        self.books.file_synced(self.inodes[fh])
        return 0

    # -- directories -----------------------------------------------------------------------------
    def opendir(self, path: str) -> int:
        return os.open(self.books.real(path), os.O_RDONLY | os.O_DIRECTORY)

    def readdir(self, path: str | None, fh: int) -> list[tuple[str, dict[str, int], int]]:
        # With use_ino, an entry's inode is the one given; glibc skips entries of inode 0.
        with os.scandir(fh) as entries:
            return [
                (
                    entry.name,
                    {"st_ino": entry.inode(), "st_mode": entry.stat(follow_symlinks=False).st_mode},
                    0,
                )
                for entry in entries
            ]

    def releasedir(self, path: str | None, fh: int) -> int:
        os.close(fh)
        return 0

    def fsyncdir(self, path: str | None, datasync: int, fh: int) -> int:
        self._sync()
        self.books.directory_synced(os.fstat(fh).st_ino)
        return 0


class LossyFuse(mfusepy.FUSE):  # type: ignore[misc]
    """mfusepy's FUSE, with the file handle passed on to `truncate` (libfuse 3 gives it; mfusepy
    drops it, and with `nullpath_ok` an ftruncate comes without a path)."""

    def truncate_fuse_3(self, path: bytes | None, length: int, fip: Any) -> int:
        fh = fip.contents.fh if fip else None
        decoded = None if path is None else path.decode(self.encoding, self.errors)
        return int(self.operations.truncate(decoded, length, fh))
