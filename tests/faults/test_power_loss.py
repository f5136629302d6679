"""power-loss's plan (no Docker): which files a lost page cache cuts, from a broker's own files."""

from __future__ import annotations

import struct

from faults.power import RECOVERY_CHECKPOINT, _wanted, plan_cuts


def message(offset: int, value: bytes) -> bytes:
    body = struct.pack(">iBBi", 0, 0, 0, -1) + struct.pack(">i", len(value)) + value
    return struct.pack(">qi", offset, len(body)) + body


def segment(first: int, count: int) -> bytes:
    return b"".join(message(first + i, b"v%d" % (first + i)) for i in range(count))


def name(base: int) -> str:
    return f"{base:020d}.log"


def test_logs_are_cut_back_to_their_recovery_points() -> None:
    files = {
        ("", RECOVERY_CHECKPOINT): b"0\n2\nt 0 12\nt 1 0\n",
        ("t-0", name(0)): segment(0, 10),
        ("t-0", name(10)): segment(10, 5),  # offsets 10-14: cut after 11
        ("t-0", name(15)): segment(15, 5),  # wholly unflushed: removed
        ("t-1", name(0)): segment(0, 3),  # nothing flushed: emptied, kept as the first segment
        ("t-2", name(0)): segment(0, 3),  # not in the checkpoint: as if nothing was flushed
    }
    cuts = {c.partition: (c.recovery_point, c.commands) for c in plan_cuts(files)}
    at = len(segment(10, 2))
    data = "/var/lib/kafka/data"
    assert cuts["t-0"] == (
        12,
        (
            f"truncate -s {at} {data}/t-0/{name(10)}",
            f"rm -f {data}/t-0/00000000000000000010.index",
            f"rm -f {data}/t-0/{name(15)} {data}/t-0/00000000000000000015.index",
        ),
    )
    assert cuts["t-1"] == (
        0,
        (f"truncate -s 0 {data}/t-1/{name(0)}", f"rm -f {data}/t-1/00000000000000000000.index"),
    )
    assert cuts["t-2"][0] == 0 and cuts["t-2"][1][0].startswith("truncate -s 0")


def test_a_log_flushed_to_its_end_is_left_alone() -> None:
    files = {("", RECOVERY_CHECKPOINT): b"0\n1\nt 0 10\n", ("t-0", name(0)): segment(0, 10)}
    assert [c.commands for c in plan_cuts(files)] == [()]


def test_the_kraft_metadata_log_is_never_cut() -> None:
    # Raft fsyncs it as it appends, and the recovery-point checkpoint leaves it out (it would read
    # as 0): a power loss keeps it whole.
    assert not _wanted("__cluster_metadata-0", "00000000000000000000.log")
    assert _wanted("chaos-acks-all-0", "00000000000000000000.log")
    assert _wanted("", RECOVERY_CHECKPOINT)
