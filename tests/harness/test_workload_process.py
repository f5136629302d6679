"""Workload processes that do not stop, without a cluster (docs/CLIENTS.md, "Stopping on time"):
one blocked in a client call answers `stack` and is killed at the bound, its client's queued log
lines served first; one stopped by a signal answers nothing and is killed all the same. The client
points at a closed loopback port: `init_transactions` blocks for its whole timeout."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from contract.history import CLIENT, CONSUMES, TRANSACTIONS, WRITES, HistoryWriter, RunClock, RunDir
from harness.groups import ConsumerGroups, GroupSpec
from harness.producer import ProducerSpec
from harness.transactional_producer import TransactionalProducerSpec, TransactionSpec
from harness.waiting import wait_until
from harness.workload_process import Killed, WorkloadProcess, stop_all

UNREACHABLE = {"bootstrap.servers": "127.0.0.1:1"}


def lines(root: Path, name: str) -> list[dict[str, object]]:
    path = root / name
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def sinks(rundir: RunDir, *names: str) -> dict[str, HistoryWriter]:
    return {Path(name).stem: rundir.writer(name) for name in names}


def test_a_process_blocked_in_a_client_call_leaves_its_stacks_and_is_killed_at_the_bound(
    tmp_path: Path,
) -> None:
    rundir, clock = RunDir(tmp_path), RunClock()
    spec = TransactionalProducerSpec(
        process="tx-0",
        origin_ns=clock.origin_ns,
        config=UNREACHABLE,
        transactional_id="kchaos-tx-0",
        topics=["chaos-txn-0"],
        partitions=1,
        transactions=TransactionSpec(call_timeout_ms=120_000),
        seed=1,
    )
    writers = sinks(rundir, WRITES, TRANSACTIONS, CLIENT)
    process = WorkloadProcess(spec, writers, rundir)
    process.start()
    try:
        wait_until(
            lambda: (bool(lines(tmp_path, TRANSACTIONS)), "no step yet"),
            what="the init's invoke",
            timeout_s=30,
        )
        started = time.monotonic()
        killed = stop_all([process], bound_s=3.0)
        took_s = time.monotonic() - started
    finally:
        process.close()
        for writer in writers.values():
            writer.close()
    assert killed == [
        Killed("tx-0", "did not stop within the stop bound (3 s): its stacks are in logs/tx-0.log")
    ]
    assert 2.0 <= took_s < 3.5, took_s  # asked for stacks a second before the bound, killed once they came
    assert process.exit_code == -signal.SIGKILL and process.killed
    log = (tmp_path / "logs/tx-0.log").read_text()
    stacks = log[log.index("-- stacks of every thread --") : log.index("-- end of stacks --")]
    assert "in _client" in stacks and "in obey" in stacks  # the main thread in init, the command reader
    # The init never completed: the history holds its invoke only, and what the stuck client logged
    # came out when it was asked for its stacks.
    assert [(s["type"], s["phase"]) for s in lines(tmp_path, TRANSACTIONS)] == [("init", "invoke")]
    assert any("127.0.0.1:1" in str(c["message"]) for c in lines(tmp_path, CLIENT))


def test_a_process_stopped_by_a_signal_answers_nothing_and_is_killed_at_the_bound(tmp_path: Path) -> None:
    rundir = RunDir(tmp_path)
    writers = sinks(rundir, CONSUMES)
    groups = ConsumerGroups(
        [GroupSpec("g", ("chaos-acks-all",), members=1)], {"g": UNREACHABLE}, writers, RunClock(), rundir
    )
    member = groups.member("g-0")
    groups.start()
    try:
        wait_until(
            lambda: (any(e["type"] == "start" for e in lines(tmp_path, CONSUMES)), "no start yet"),
            what="the member's start event",
            timeout_s=30,
        )
        assert member.pid is not None
        os.kill(member.pid, signal.SIGSTOP)  # behind the conductor's back: `stop` resumes only what it paused
        started = time.monotonic()
        killed = groups.stop(bound_s=2.0)
        took_s = time.monotonic() - started
    finally:
        member.close()
        writers["consumes"].close()
    assert killed == [
        Killed("g-0", "did not stop within the stop bound (2 s): it answered no `stack` (stopped?)")
    ]
    assert took_s < 2.5, took_s
    assert [(e["type"], e.get("reason")) for e in lines(tmp_path, CONSUMES)] == [
        ("start", None),
        ("stop", "killed"),
    ]


def test_an_acks_0_producer_ends_its_stdout_when_done_and_keeps_its_client_until_closed(
    tmp_path: Path,
) -> None:
    """librdkafka calls an acks=0 write done once handed to the socket: its client must outlive the
    stop, or the tail may never be sent. Every other process exits when done."""
    rundir, clock = RunDir(tmp_path), RunClock()
    writers = sinks(rundir, WRITES, CLIENT)
    processes = [
        WorkloadProcess(
            ProducerSpec(
                process=f"p-{acks}-0",
                origin_ns=clock.origin_ns,
                config=UNREACHABLE,
                topic="t",
                partitions=1,
                acks=acks,
                max_writes=0,
            ),
            writers,
            rundir,
        )
        for acks in ("0", "1")
    ]
    try:
        for process in processes:
            process.start()
        assert stop_all(processes, bound_s=30.0) == []
        keeper, exited = processes
        assert keeper.done and keeper.alive and keeper.exit_code is None
        assert exited.done and exited.exit_code == 0
    finally:
        for process in processes:
            process.close()
        for writer in writers.values():
            writer.close()
    assert keeper.exit_code == 0 and not keeper.killed  # it exited at the end of its stdin


def test_a_ctrl_c_at_the_terminal_does_not_reach_the_clients_the_conductor_stops_them(tmp_path: Path) -> None:
    rundir = RunDir(tmp_path)
    writers = sinks(rundir, CONSUMES)
    groups = ConsumerGroups(
        [GroupSpec("g", ("chaos-acks-all",), members=1)], {"g": UNREACHABLE}, writers, RunClock(), rundir
    )
    member = groups.member("g-0")
    groups.start()
    try:
        wait_until(
            lambda: (any(e["type"] == "start" for e in lines(tmp_path, CONSUMES)), "no start yet"),
            what="the member's start event",
            timeout_s=30,
        )
        assert member.pid is not None
        # A terminal's Ctrl-C (or `timeout`'s signal) goes to the conductor's process group only; in
        # the conductor's session, a member it leaves stopped is woken when it dies.
        assert os.getpgid(member.pid) == member.pid != os.getpgid(0)
        assert os.getsid(member.pid) == os.getsid(0)
        assert groups.stop(bound_s=20.0) == []
    finally:
        member.close()
        writers["consumes"].close()
    assert member.exit_code == 0
    assert [(e["type"], e.get("reason")) for e in lines(tmp_path, CONSUMES)] == [
        ("start", None),
        ("stop", "closed"),
    ]
