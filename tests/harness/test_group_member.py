"""Group members as workload processes, without a cluster: their verbs, their `stop` events, what
the harness follows of their state, and that none outlives the harness. The members' client points
at a closed loopback port, so it never joins."""

from __future__ import annotations

import json
import os
import signal
import struct
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from contract.history import CONSUMES, RunClock, RunDir
from harness import group_member
from harness.broker_config import KafkaVersion
from harness.clients import client_config
from harness.group_member import Member, MemberSpec, commit_outcome, generation_of
from harness.groups import (
    DEFAULT_MEMBER_CONFIG,
    ConsumerGroups,
    GroupSpec,
    MemberState,
    describe_states,
    stable,
)
from harness.waiting import wait_until

UNREACHABLE = client_config("127.0.0.1:1", KafkaVersion((0, 9, 0, 1)))
MEMBERS = {"g": {**{k: v for k, v in UNREACHABLE.items() if k != "logger"}, **DEFAULT_MEMBER_CONFIG}}
"""Group g's member settings, whole: no broker to reach."""


def test_generation_is_read_from_the_serialized_group_metadata() -> None:
    metadata = b"CGMDv2:" + struct.pack("=i", 7) + b"g\x00m\x00\x00"
    assert generation_of(metadata) == 7
    assert generation_of(b"CGMDv2:" + struct.pack("=i", -1) + b"g\x00") is None  # not in a group yet
    assert generation_of(b"CGMDv9:....") is None  # another layout: unknown, not guessed


def test_commit_outcomes_split_refused_from_unknown() -> None:
    assert commit_outcome(None) == "ok"
    assert commit_outcome(KafkaError.ILLEGAL_GENERATION) == "fail"  # a zombie's commit, refused
    assert commit_outcome(KafkaError.REBALANCE_IN_PROGRESS) == "fail"
    # KIP-848: a commit sent with the member epoch a heartbeat has just replaced is refused (these
    # were recorded as unknown until 2026-12-06: 6 in the consumer-groups-kip848 runs)
    assert commit_outcome(KafkaError.STALE_MEMBER_EPOCH) == "fail"
    assert commit_outcome(KafkaError.FENCED_MEMBER_EPOCH) == "fail"
    assert commit_outcome(KafkaError._TIMED_OUT) == "info"  # may have been stored
    assert commit_outcome(KafkaError._TRANSPORT) == "info"


def events(root: Path) -> list[dict[str, object]]:
    path = root / CONSUMES
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def started(root: Path, count: int) -> tuple[bool, str]:
    seen = [e["process"] for e in events(root) if e["type"] == "start"]
    return len(seen) >= count, f"started: {seen}"


def test_members_stop_cleanly_or_are_killed_and_say_which(tmp_path: Path) -> None:
    rundir = RunDir(tmp_path)
    spec = GroupSpec("g", ("chaos-acks-all",), members=2)
    with rundir.writer(CONSUMES) as writer:
        groups = ConsumerGroups([spec], MEMBERS, {"consumes": writer}, RunClock(), rundir)
        groups.start()
        try:
            wait_until(lambda: started(tmp_path, 2), what="both members' start events", timeout_s=30)
            # no broker: running, never assigned
            assert groups.states() == {"g": [MemberState("g-0", True, None), MemberState("g-1", True, None)]}
            groups.member("g-0").kill()
            groups.member("g-1").pause()
            assert groups.states("g") == {
                "g": [MemberState("g-0", False, None), MemberState("g-1", False, None)]
            }
            groups.member("g-1").stop(20)  # resumed first, then asked to stop
        finally:
            assert groups.stop() == []  # nothing left to kill
    stops = {e["process"]: e["reason"] for e in events(tmp_path) if e["type"] == "stop"}
    assert stops == {"g-0": "killed", "g-1": "closed"}
    assert (groups.member("g-0").exit_code, groups.member("g-1").exit_code) == (-signal.SIGKILL, 0)
    assert "Fatal Python error" not in (tmp_path / "logs/g-1.log").read_text()  # a clean exit, too
    assert (tmp_path / "logs/g-0.log").exists()  # where each member's client logs go
    with pytest.raises(Exception, match="no group member 'g-7'"):
        groups.member("g-7")


def test_a_member_is_assigned_from_its_last_assign_until_a_revoke(tmp_path: Path) -> None:
    rundir = RunDir(tmp_path)
    spec = GroupSpec("g", ("chaos-acks-all",), members=1)
    lines = [
        b'{"type":"start","process":"g-0"}\n',
        b'{"type":"assign","process":"g-0","generation":1,"partitions":[]}\n',
        b'{"type":"revoke","process":"g-0","generation":1,"partitions":[]}\n',
        b'{"type":"assign","process":"g-0","generation":2,"partitions":[]}\n',
        b'{"type":"assign","process":"g-0","generation":null,"partitions":[]}\n',
        b'{"type":"assign",\n',  # copied as it is, for the history's reader to name
    ]
    seen: list[int | None] = []
    with rundir.writer(CONSUMES) as writer:
        member = ConsumerGroups([spec], MEMBERS, {"consumes": writer}, RunClock(), rundir).member("g-0")
        for line in lines:  # as they arrive, one batch each
            member._observe("consumes", line)
            seen.append(member.state.assigned)
        # A batch of several lines leaves the state its last assign or revoke made.
        member._observe("consumes", b"".join(lines[1:4]))
        assert member.state.assigned == 2
        member._observe("consumes", b"".join(lines[:3]) + b'{"type":"poll"}\n')
        assert member.state.assigned is None and member.polled == 1
    assert seen == [None, 1, None, 2, -1, -1]  # -1: assigned, in a generation the member could not read
    assert not member.state.running  # never started


def test_a_group_is_stable_when_every_member_runs_and_is_assigned_in_one_generation() -> None:
    def group(*states: tuple[bool, int | None]) -> list[MemberState]:
        return [MemberState(f"g-{i}", running, assigned) for i, (running, assigned) in enumerate(states)]

    assert stable(group((True, 3), (True, 3)))
    assert not stable(group((True, 3), (True, 3), (False, 3)))  # one killed or frozen: not whole
    assert not stable(group((True, 3), (True, None)))  # one has not joined, or is between rebalances
    assert not stable(group((True, 2), (True, 3)))  # one is still in the generation before
    assert not stable([])
    assert describe_states(group((True, 2), (True, None), (False, 2))) == (
        "g-0 in generation 2, g-1 unassigned, g-2 stopped or frozen"
    )


def test_members_do_not_outlive_a_harness_that_dies(tmp_path: Path) -> None:
    harness = textwrap.dedent(
        f"""
        import os, sys, time
        from pathlib import Path
        from harness.groups import ConsumerGroups, GroupSpec, MemberState, describe_states, stable
        from contract.history import CONSUMES, RunClock, RunDir
        rundir = RunDir(Path({str(tmp_path)!r}))
        groups = ConsumerGroups([GroupSpec("g", ("chaos-acks-all",), members=1)], {UNREACHABLE_TEXT},
                                {{"consumes": rundir.writer(CONSUMES)}}, RunClock(), rundir)
        groups.start()
        print(groups.members["g-0"]._child.pid, flush=True)
        sys.stdin.readline()
        os._exit(0)  # no cleanup of any kind
        """
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", harness], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert parent.stdout is not None and parent.stdin is not None
    member_pid = int(parent.stdout.readline())
    wait_until(lambda: started(tmp_path, 1), what="the member's start event", timeout_s=30)
    parent.stdin.write("\n")
    parent.stdin.flush()
    parent.wait(10)

    def gone() -> tuple[bool, str]:
        try:
            os.kill(member_pid, 0)
        except ProcessLookupError:
            return True, "exited"
        status = Path(f"/proc/{member_pid}/stat").read_text().split()[2]
        return status == "Z", f"still running (state {status})"

    try:
        wait_until(gone, what="the orphaned member to exit", timeout_s=15)
    finally:
        if gone()[0] is False:
            os.kill(member_pid, signal.SIGKILL)


UNREACHABLE_TEXT = repr(MEMBERS)


class _Sink:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def write(self, event: Mapping[str, Any]) -> None:
        self.events.append(dict(event))

    def write_bytes(self, data: bytes) -> None:
        raise AssertionError("members write events")

    @property
    def closed(self) -> bool:
        return False


class _Consumer:
    """What an at-most-once member asks of its consumer after a refused commit (pure logic)."""

    def __init__(self, owned: list[tuple[str, int]], *, seek_fails: bool = False) -> None:
        self.owned, self.seek_fails = owned, seek_fails
        self.sought: list[tuple[str, int, int]] = []

    def assignment(self) -> list[TopicPartition]:
        return [TopicPartition(t, p) for t, p in self.owned]

    def seek(self, tp: TopicPartition) -> None:
        if self.seek_fails:
            raise KafkaException(KafkaError(KafkaError._STATE))
        self.sought.append((tp.topic, tp.partition, tp.offset))

    def consumer_group_metadata(self) -> bytes:
        return b"CGMDv2:" + struct.pack("=i", 3) + b"g\x00m\x00\x00"

    def close(self) -> None:
        pass


def at_most_once_member(consumer: _Consumer, commit: str) -> tuple[Member, _Sink]:
    spec = MemberSpec(
        process="g-amo-0",
        origin_ns=0,
        config={},
        group="g-amo",
        topics=["t"],
        commit="before-process",
        commit_async=False,
    )
    sink = _Sink()
    member = Member(spec, dict(MEMBERS["g"]), sink)
    member.consumer.close()
    member.consumer = consumer  # type: ignore[assignment]
    member._commit = lambda offsets, asynchronous: commit  # type: ignore[method-assign]
    return member, sink


BATCH_OF_TWO_PARTITIONS = [("t", 0, 100, "a"), ("t", 0, 101, "b"), ("t", 1, 7, "c")]


@pytest.mark.parametrize("outcome", ["fail", "info"])
def test_an_at_most_once_batch_whose_commit_is_not_stored_is_read_again_where_still_owned(
    monkeypatch: pytest.MonkeyPatch, outcome: str
) -> None:
    # KIP-848: a commit refused with STALE_MEMBER_EPOCH while the member keeps its partitions; the
    # batch dropped without a seek was skipped by the next commit (FINDINGS, consumer groups on 4.1.1).
    monkeypatch.setattr(group_member, "_record", lambda record: record)
    consumer = _Consumer(owned=[("t", 0)])  # partition 1 went to another member meanwhile
    member, sink = at_most_once_member(consumer, outcome)
    member._handle(BATCH_OF_TWO_PARTITIONS)  # type: ignore[arg-type]
    assert consumer.sought == [("t", 0, 100)]
    assert [e for e in sink.events if e["type"] == "poll"] == []  # nothing processed


def test_an_at_most_once_batch_whose_commit_is_stored_is_processed_and_not_read_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(group_member, "_record", lambda record: record)
    consumer = _Consumer(owned=[("t", 0), ("t", 1)])
    member, sink = at_most_once_member(consumer, "ok")
    member._handle(BATCH_OF_TWO_PARTITIONS)  # type: ignore[arg-type]
    assert consumer.sought == []
    assert [(e["partition"], e["offset"]) for e in sink.events if e["type"] == "poll"] == [
        (0, 100),
        (0, 101),
        (1, 7),
    ]


def test_a_seek_the_client_refuses_leaves_the_batch_unprocessed_and_the_member_running(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(group_member, "_record", lambda record: record)
    consumer = _Consumer(owned=[("t", 0)], seek_fails=True)  # revoked between assignment() and seek
    member, sink = at_most_once_member(consumer, "fail")
    member._handle(BATCH_OF_TWO_PARTITIONS)  # type: ignore[arg-type]
    assert [e for e in sink.events if e["type"] == "poll"] == []
