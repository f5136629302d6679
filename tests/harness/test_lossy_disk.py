"""The lossy disk on a plain temporary directory (no Kafka): what a drop keeps is exactly what was
synced, file by file and name by name. Needs /dev/fuse and root (marker `fuse`)."""

from __future__ import annotations

import errno
import mmap
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.lossy.mounts import LossyMount

pytestmark = pytest.mark.fuse


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[LossyMount]:
    mount = LossyMount(tmp_path / "node")
    mount.start()
    try:
        yield mount
    finally:
        mount.stop()


def write(path: Path, data: bytes, *, sync: bool = False, flags: int = 0) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | flags, 0o644)
    try:
        os.write(fd, data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def sync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def synced_file(disk: LossyMount, name: str, data: bytes) -> Path:
    """A file whose content and name are both synced."""
    path = disk.mount / name
    write(path, data, sync=True, flags=os.O_TRUNC)
    sync_dir(path.parent)
    return path


def test_a_drop_keeps_what_was_fsynced_and_nothing_after(disk: LossyMount) -> None:
    path = synced_file(disk, "log", b"synced ")
    write(path, b"lost", flags=os.O_APPEND)
    assert path.read_bytes() == b"synced lost" and path.stat().st_size == 11
    dropped = disk.drop()
    assert path.stat().st_size == 7  # the kernel forgot the size it had cached
    assert path.read_bytes() == b"synced "
    assert dropped["files"] == {"log": {"unsynced": 4, "dropped": 4}}
    assert dropped["dropped_bytes"] == 4 and dropped["undone"] == []


def test_fdatasync_syncs_like_fsync(disk: LossyMount) -> None:
    path = synced_file(disk, "log", b"a")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, b"b")
        os.fdatasync(fd)
        os.write(fd, b"c")
    finally:
        os.close(fd)
    disk.drop()
    assert path.read_bytes() == b"ab"


def test_an_overwrite_of_synced_bytes_is_undone(disk: LossyMount) -> None:
    path = synced_file(disk, "index", bytes(range(256)) * 40)  # 10240 bytes, three pages
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, b"X" * 5000, 3000)  # across the first page boundary into the second
    finally:
        os.close(fd)
    dropped = disk.drop()
    assert path.read_bytes() == bytes(range(256)) * 40
    assert dropped["files"]["index"] == {"unsynced": 5000, "dropped": 5000}


def test_writes_through_mmap_are_dropped_too(disk: LossyMount) -> None:
    # Kafka's offset and time indexes are memory-mapped: the kernel writes their pages back to the
    # layer later, and a drop first makes it hand them over.
    path = synced_file(disk, "index", bytes(8192))
    with open(path, "r+b") as f, mmap.mmap(f.fileno(), 8192) as mapped:
        mapped[100:104] = b"ABCD"
    disk.drop()
    assert path.read_bytes() == bytes(8192)


def test_truncation_is_undone_both_ways(disk: LossyMount) -> None:
    shrunk = synced_file(disk, "shrunk", b"0123456789" * 1000)
    grown = synced_file(disk, "grown", b"abc")
    os.truncate(shrunk, 5)
    os.truncate(grown, 100_000)
    dropped = disk.drop()
    assert shrunk.read_bytes() == b"0123456789" * 1000
    assert grown.read_bytes() == b"abc"
    assert dropped["files"]["shrunk"]["dropped"] == 9995
    assert dropped["files"]["grown"]["dropped"] == 0  # zeros only: no data was lost


def test_open_with_o_trunc_is_undone(disk: LossyMount) -> None:
    path = synced_file(disk, "f", b"keep me")
    write(path, b"new", flags=os.O_TRUNC)
    disk.drop()
    assert path.read_bytes() == b"keep me"


def test_o_append_writes_land_at_the_end_and_are_dropped(disk: LossyMount) -> None:
    path = synced_file(disk, "log", b"0")
    for part in (b"1", b"22", b"333"):
        write(path, part, flags=os.O_APPEND)
    assert path.read_bytes() == b"0122333"
    assert disk.drop()["files"]["log"] == {"unsynced": 6, "dropped": 6}
    assert path.read_bytes() == b"0"


def test_a_create_without_a_directory_fsync_is_undone_even_when_the_file_was_fsynced(
    disk: LossyMount,
) -> None:
    path = disk.mount / "new"
    write(path, b"data", sync=True)
    dropped = disk.drop()
    assert not path.exists()
    assert dropped["undone"] == ["create new"]
    assert dropped["files"]["new"] == {"unsynced": 0, "dropped": 0}  # its synced bytes went with its name
    write(path, b"never synced")
    assert disk.drop()["files"]["new"] == {"unsynced": 12, "dropped": 12}


def test_a_created_file_with_its_directory_synced_keeps_its_name_but_not_unsynced_data(
    disk: LossyMount,
) -> None:
    path = disk.mount / "new"
    write(path, b"data")
    sync_dir(disk.mount)
    disk.drop()
    assert path.exists() and path.read_bytes() == b""


def test_a_rename_without_a_directory_fsync_is_undone(disk: LossyMount) -> None:
    old = synced_file(disk, "old", b"old content")
    replaced = synced_file(disk, "target", b"target content")
    os.rename(old, replaced)
    assert replaced.read_bytes() == b"old content"
    dropped = disk.drop()
    assert old.read_bytes() == b"old content" and replaced.read_bytes() == b"target content"
    assert dropped["undone"] == ["rename old -> target"]


def test_an_unlink_without_a_directory_fsync_is_undone(disk: LossyMount) -> None:
    path = synced_file(disk, "segment", b"records")
    path.unlink()
    assert not path.exists()
    disk.drop()
    assert path.read_bytes() == b"records"


def test_a_synced_unlink_stays(disk: LossyMount) -> None:
    path = synced_file(disk, "segment", b"records")
    path.unlink()
    sync_dir(disk.mount)
    disk.drop()
    assert not path.exists()
    assert list(disk.stash.iterdir()) == []  # the stashed file is gone once its removal is synced


def test_directories_made_and_removed_are_undone_in_order(disk: LossyMount) -> None:
    kept = disk.mount / "kept"
    kept.mkdir()
    sync_dir(disk.mount)
    (kept / "file").write_bytes(b"x")
    (disk.mount / "topic-0").mkdir()
    write(disk.mount / "topic-0" / "00.log", b"abc", sync=True)
    os.rename(disk.mount / "topic-0", disk.mount / "topic-0.delete")
    dropped = disk.drop()
    assert sorted(p.name for p in disk.mount.iterdir()) == ["kept"]
    assert list(kept.iterdir()) == []
    assert dropped["undone"] == [
        "rename topic-0 -> topic-0.delete",
        "create topic-0/00.log",
        "mkdir topic-0",
        "create kept/file",
    ]


def test_kafkas_checkpoint_pattern_survives(disk: LossyMount) -> None:
    # temp file written and fsynced, renamed over the checkpoint, the directory fsynced
    # (org.apache.kafka.common.utils.Utils.atomicMoveWithFallback with its parent flushed).
    checkpoint = synced_file(disk, "recovery-point-offset-checkpoint", b"0\n1\nt 0 10\n")
    temp = disk.mount / "recovery-point-offset-checkpoint.tmp"
    write(temp, b"0\n1\nt 0 25\n", sync=True)
    os.rename(temp, checkpoint)
    sync_dir(disk.mount)
    dropped = disk.drop()
    assert checkpoint.read_bytes() == b"0\n1\nt 0 25\n" and not temp.exists()
    assert dropped["dropped_bytes"] == 0


def test_a_torn_drop_keeps_a_seeded_prefix_of_each_files_unsynced_bytes(disk: LossyMount) -> None:
    prefixes = []
    for round_ in range(2):
        path = synced_file(disk, f"log{round_}", b"S" * 10)
        tail = bytes(range(256)) * 64  # 16 KiB unsynced
        write(path, tail, flags=os.O_APPEND)
        dropped = disk.drop(torn_seed=7)
        content = path.read_bytes()
        assert content[:10] == b"S" * 10
        kept = content[10:]
        assert tail.startswith(kept)  # a prefix, never bytes out of order
        assert dropped["files"][f"log{round_}"] == {"unsynced": len(tail), "dropped": len(tail) - len(kept)}
        prefixes.append(len(kept))
    # the seed and the path decide: the same file name and seed tear at the same place
    path = synced_file(disk, "log0", b"S" * 10)
    write(path, bytes(range(256)) * 64, flags=os.O_APPEND)
    disk.drop(torn_seed=7)
    assert len(path.read_bytes()) - 10 == prefixes[0]


def test_pages_older_than_the_write_back_age_are_kept(disk: LossyMount) -> None:
    old = synced_file(disk, "old", b"")
    write(old, b"written back", flags=os.O_APPEND)
    time.sleep(1.0)  # ages the pages written so far: this test is about time passing
    new = synced_file(disk, "new", b"")
    write(new, b"still dirty", flags=os.O_APPEND)
    dropped = disk.drop(written_back_older_than_s=0.5)
    assert old.read_bytes() == b"written back"
    assert new.read_bytes() == b""
    assert dropped["files"]["old"] == {"unsynced": 12, "dropped": 0}


def test_stats_say_what_a_drop_would_take(disk: LossyMount) -> None:
    path = synced_file(disk, "log", b"a")
    write(path, b"bcd", flags=os.O_APPEND)
    (disk.mount / "new").write_bytes(b"xy")
    unsynced = disk.request({"command": "stats"})["unsynced"]
    assert unsynced == {"files": {"log": 3, "new": 2}, "changes": ["create new"]}


def test_a_full_disk_refuses_appends_but_not_overwrites(disk: LossyMount) -> None:
    path = synced_file(disk, "log", b"abcd")
    disk.request({"command": "fault", "full": True})
    with pytest.raises(OSError) as failed:
        write(path, b"more", flags=os.O_APPEND)
    assert failed.value.errno == errno.ENOSPC
    with pytest.raises(OSError) as created:
        (disk.mount / "new").write_bytes(b"")
    assert created.value.errno == errno.ENOSPC
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, b"AB", 0)
    finally:
        os.close(fd)
    disk.request({"command": "heal"})
    write(path, b"more", flags=os.O_APPEND)
    assert path.read_bytes() == b"ABcdmore"


def test_a_failing_fsync_syncs_nothing(disk: LossyMount) -> None:
    path = synced_file(disk, "log", b"a")
    disk.request({"command": "fault", "fsync_error": True})
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, b"b")
        with pytest.raises(OSError) as failed:
            os.fsync(fd)
    finally:
        os.close(fd)
    assert failed.value.errno == errno.EIO
    assert disk.request({"command": "stats"})["faults"]["counts"] == {"fsync_eio": 1}
    disk.request({"command": "heal"})
    disk.drop()
    assert path.read_bytes() == b"a"


def test_a_slow_fsync_waits(disk: LossyMount) -> None:
    path = synced_file(disk, "log", b"a")
    disk.request({"command": "fault", "fsync_delay_s": 0.4})
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, b"b")
        started = time.monotonic()
        os.fsync(fd)
        took = time.monotonic() - started
    finally:
        os.close(fd)
    assert took >= 0.4
    disk.drop()
    assert path.read_bytes() == b"ab"  # slow, but synced


def test_a_bad_control_request_is_refused_with_its_reason(disk: LossyMount) -> None:
    with pytest.raises(Exception, match="torn_seed must be a int"):
        disk.request({"command": "drop", "torn_seed": "seven"})
    with pytest.raises(Exception, match="unknown command 'explode'"):
        disk.request({"command": "explode"})


def test_sigterm_unmounts_cleanly(tmp_path: Path) -> None:
    mount = LossyMount(tmp_path / "node")
    mount.start()
    try:
        (mount.mount / "f").write_bytes(b"through")
        pid = int(mount.pid_file.read_text())
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while mount.mounted and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not mount.mounted
        assert (mount.backing / "f").read_bytes() == b"through"
    finally:
        mount.stop()
