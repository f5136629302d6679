"""Cleanup you can trust, on pure logic: run ids that cannot select every run, `kchaos cleanup`
leaving live clusters alone, removals that go on past a failure, and a workload whose history files
close on a second Ctrl-C. (Retries and ZooKeeper reads that stop in time: test_bounded_retries.py.)"""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
import typer
from docker.errors import NotFound
from engine_errors import api_error

from contract.errors import ClusterError, HistoryError
from contract.history import RunClock, RunDir, new_run_id
from harness import docker_env, workload
from harness.broker_config import KafkaVersion
from harness.cluster import ClusterSpec, KafkaCluster
from kchaos.cli import main

LIVE_RUN = "20260101-120000-cluster-aaaa"
DEAD_RUN = "20260101-120000-killed-bbbb"
BARE_NETWORK_RUN = "20260101-120000-net-cccc"


# -- a Docker engine of fakes ------------------------------------------------------------------------
class FakeContainer:
    def __init__(self, run_id: str, node: str, status: str, fails: BaseException | None = None) -> None:
        self.name = f"{run_id}-{node}"
        self.labels = {docker_env.RUN_LABEL: run_id}
        self.status = status
        self.fails = fails
        self.removed = False

    def unpause(self) -> None:
        self.status = "running"

    def remove(self, force: bool, v: bool) -> None:
        assert force and v
        if self.fails is not None:
            raise self.fails
        self.removed = True


class FakeNetwork:
    def __init__(self, run_id: str) -> None:
        self.name = f"{run_id}-net"
        self.attrs = {"Labels": {docker_env.RUN_LABEL: run_id}}
        self.removed = False

    def remove(self) -> None:
        self.removed = True


def _selects(selector: str, labels: dict[str, str]) -> bool:
    key, _, value = selector.partition("=")
    return key in labels and (not value or labels[key] == value)


class FakeEngine:
    def __init__(self, containers: list[FakeContainer], networks: list[FakeNetwork]) -> None:
        self.all_containers, self.all_networks = containers, networks
        self.containers = SimpleNamespace(list=self._list_containers)
        self.networks = SimpleNamespace(list=self._list_networks)

    def _list_containers(self, all: bool, filters: dict[str, str]) -> list[FakeContainer]:
        assert all
        alive = [c for c in self.all_containers if not c.removed]
        return [c for c in alive if _selects(filters["label"], c.labels)]

    def _list_networks(self, filters: dict[str, str]) -> list[FakeNetwork]:
        return [
            n for n in self.all_networks if not n.removed and _selects(filters["label"], n.attrs["Labels"])
        ]


@pytest.fixture
def engine(monkeypatch: pytest.MonkeyPatch) -> FakeEngine:
    """A live cluster, the exited leftovers of a killed run, and a network left alone."""
    fake = FakeEngine(
        [
            FakeContainer(LIVE_RUN, "zk-1", "running"),
            FakeContainer(LIVE_RUN, "kafka-1", "paused"),
            FakeContainer(LIVE_RUN, "kafka-2", "exited"),  # a killed broker of a live cluster
            FakeContainer(DEAD_RUN, "zk-1", "exited"),
            FakeContainer(DEAD_RUN, "kafka-1", "created"),
        ],
        [FakeNetwork(LIVE_RUN), FakeNetwork(DEAD_RUN), FakeNetwork(BARE_NETWORK_RUN)],
    )
    monkeypatch.setattr(docker_env, "client", lambda: fake)
    return fake


def left(engine: FakeEngine) -> list[str]:
    return sorted(o.name for o in [*engine.all_containers, *engine.all_networks] if not o.removed)


# -- run ids ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("run_id", ["", " ", "*", "2026*", "a b", "_x", "run\n", "../x", "kafka?"])
@pytest.mark.parametrize(
    "command",
    [["cleanup", "--run"], ["cluster", "down"], ["cluster", "status"], ["heal"], ["faults", "--run"]],
)
def test_a_run_id_that_could_select_every_run_is_refused(
    run_id: str, command: list[str], engine: FakeEngine, capsys: pytest.CaptureFixture[str]
) -> None:
    before = left(engine)
    assert main([*command, run_id]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"error: {run_id!r} is not a run id" in err
    assert left(engine) == before


def test_run_ids_we_make_are_accepted() -> None:
    for name in ("leader-kill", "Ünïcode scenario", "x" * 40, "", "compose"):
        run_id = new_run_id(name)
        assert docker_env.check_run_id(run_id) == run_id
    assert docker_env.check_run_id("compose") == "compose"  # compose/docker-compose.yml's label


# -- kchaos cleanup -------------------------------------------------------------------------------------
def test_cleanup_without_tty_removes_only_dead_runs_and_says_what_it_left(
    engine: FakeEngine, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["cleanup"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert left(engine) == sorted(
        [f"{LIVE_RUN}-zk-1", f"{LIVE_RUN}-kafka-1", f"{LIVE_RUN}-kafka-2", f"{LIVE_RUN}-net"]
    )
    assert f"left {LIVE_RUN} 3 containers (exited 1, paused 1, running 1), 1 network: live" in out
    assert f"remove {DEAD_RUN} 2 containers (created 1, exited 1), 1 network" in out
    assert f"remove {BARE_NETWORK_RUN} 0 containers, 1 network" in out
    assert "removed 2 containers, 2 networks" in out
    assert "left 1 live runs: `kchaos cluster down RUN_ID` or `kchaos cleanup --all` removes them" in out


def test_cleanup_all_removes_live_runs_too(engine: FakeEngine, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cleanup", "--all"]) == 0
    assert left(engine) == []
    assert "removed 5 containers, 3 networks" in capsys.readouterr().out


@pytest.mark.parametrize(("answer", "live_left"), [(True, False), (False, True)])
def test_cleanup_on_a_terminal_asks_before_removing_live_runs(
    answer: bool, live_left: bool, engine: FakeEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    asked: list[str] = []
    monkeypatch.setattr(sys, "stdin", Terminal())
    monkeypatch.setattr(typer, "confirm", lambda text: asked.append(text) or answer)
    assert main(["cleanup"]) == 0
    assert asked == ["Remove these 1 live runs too (their clusters stop)?"]
    assert (f"{LIVE_RUN}-net" in left(engine)) is live_left


def test_cleanup_of_one_run_removes_it_live_or_not(engine: FakeEngine) -> None:
    assert main(["cleanup", "--run", LIVE_RUN]) == 0
    assert not any(name.startswith(LIVE_RUN) for name in left(engine))
    assert f"{DEAD_RUN}-net" in left(engine)


def test_cleanup_goes_on_past_failures_and_reports_them_all(
    engine: FakeEngine, capsys: pytest.CaptureFixture[str]
) -> None:
    refused, forbidden = api_error(400), api_error(403)
    engine.all_containers[0].fails = refused
    engine.all_containers[3].fails = forbidden
    assert main(["cleanup", "--all"]) == 2
    captured = capsys.readouterr()
    assert left(engine) == [f"{LIVE_RUN}-zk-1", f"{DEAD_RUN}-zk-1"]
    assert "removed 3 containers, 3 networks" in captured.out
    assert " ".join(captured.err.split()) == (
        f"error: cannot remove container {LIVE_RUN}-zk-1: {refused}; "
        f"cannot remove container {DEAD_RUN}-zk-1: {forbidden}"
    )


def test_a_container_removed_concurrently_counts_as_removed_without_error(engine: FakeEngine) -> None:
    engine.all_containers[3].fails = NotFound("gone")
    removed = docker_env.remove_labelled(DEAD_RUN)
    assert removed.containers == [f"{DEAD_RUN}-kafka-1"] and removed.networks == [f"{DEAD_RUN}-net"]


def test_cluster_close_goes_on_past_each_failure(engine: FakeEngine) -> None:
    cluster = KafkaCluster(ClusterSpec(), run_id=LIVE_RUN)

    class StuckSession:
        def close(self) -> None:
            raise RuntimeError("Writer still open from prior connection")

    cluster._metadata = StuckSession()  # type: ignore[assignment]
    refused = engine.all_containers[1].fails = api_error(400)
    with pytest.raises(ClusterError) as info:
        cluster.close()
    assert str(info.value) == (
        "cannot close the metadata reader: Writer still open from prior connection; "
        f"cannot remove run {LIVE_RUN}: cannot remove container {LIVE_RUN}-kafka-1: {refused}"
    )
    others = [*(f"{DEAD_RUN}-{n}" for n in ("zk-1", "kafka-1", "net")), f"{BARE_NETWORK_RUN}-net"]
    assert left(engine) == sorted([f"{LIVE_RUN}-kafka-1", *others])
    engine.all_containers[1].fails = None
    cluster.close()  # a second close finishes the job, and the session is not closed twice
    assert not any(name.startswith(LIVE_RUN) for name in left(engine))


def test_an_error_leaving_the_with_block_is_not_hidden_by_a_failing_close(engine: FakeEngine) -> None:
    refused = engine.all_containers[0].fails = api_error(400)
    cluster = KafkaCluster(ClusterSpec(), run_id=LIVE_RUN)
    boom = RuntimeError("boom")
    cluster.__exit__(RuntimeError, boom, None)  # what leaving `with cluster:` by raising `boom` does
    assert boom.__notes__ == [
        f"removing the cluster afterwards failed too: cannot remove run {LIVE_RUN}: "
        f"cannot remove container {LIVE_RUN}-zk-1: {refused}"
    ]


# -- a second Ctrl-C while the workload stops ------------------------------------------------------------
class FakeProcess:
    """A workload process's handle (`harness.workload_process.WorkloadProcess`) that starts nothing."""

    killed = False
    exit_code = 0

    def __init__(self, spec: Any, sinks: Any, rundir: Any) -> None:
        self.process, self.sinks = spec.process, sinks
        self.calls: list[str] = []

    @property
    def writer(self) -> Any:
        return self.sinks["writes"]

    def start(self) -> None:
        self.calls.append("start")

    def close(self) -> None:
        self.calls.append("close")


def interrupted_stop(processes: Any, bound_s: float) -> Any:
    for process in processes:
        process.calls.append("stop")
    raise KeyboardInterrupt  # the second Ctrl-C, while waiting for the processes to stop


class FakeConsumer:
    def __init__(self, process: str, partitions: Any, config: Any, writer: Any, clock: Any) -> None:
        self.process, self.writer, self.error, self.read = process, writer, None, 0
        self.calls: list[str] = []

    def start(self) -> None:
        self.calls.append("start")

    def stop(self) -> None:
        self.calls.append("stop")


@pytest.fixture
def fake_clients(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(workload, "WorkloadProcess", FakeProcess)
    monkeypatch.setattr(workload, "stop_all", interrupted_stop)
    monkeypatch.setattr(workload, "LiveConsumer", FakeConsumer)
    yield


def assert_closed(writer: Any) -> None:
    with pytest.raises(HistoryError, match="already closed"):
        writer.write({"type": "probe"})


def test_history_files_are_closed_when_an_interrupt_hits_stop(fake_clients: None, tmp_path: Any) -> None:
    cluster = SimpleNamespace(bootstrap_servers="127.0.0.1:9092", kafka_version=KafkaVersion.parse("0.9.0.1"))
    spec = workload.WorkloadSpec(acks=("all", "1"))
    with (
        pytest.raises(KeyboardInterrupt),
        workload.Workload(cluster, spec, RunDir(tmp_path), RunClock()) as w,
    ):  # type: ignore[arg-type]
        w.start()
        w.stop()
    producers: list[FakeProcess] = w.producers  # type: ignore[assignment]
    consumers: list[FakeConsumer] = w.consumers  # type: ignore[assignment]
    # Every step of stop ran although waiting for the processes was interrupted, then everything
    # was closed.
    assert [p.calls for p in producers] == [["start", "stop", "close"]] * 2
    assert [c.calls for c in consumers] == [["start", "stop"]]
    assert_closed(producers[0].writer)
    assert_closed(consumers[0].writer)
    w.stop()  # idempotent: nothing is stopped twice
    w.close()
    assert [p.calls for p in producers] == [["start", "stop", "close", "close"]] * 2


def test_an_interrupt_in_close_still_closes_every_history_file(fake_clients: None, tmp_path: Any) -> None:
    cluster = SimpleNamespace(bootstrap_servers="127.0.0.1:9092", kafka_version=KafkaVersion.parse("0.9.0.1"))
    w = workload.Workload(cluster, workload.WorkloadSpec(acks=("all",)), RunDir(tmp_path), RunClock())  # type: ignore[arg-type]
    w.start()
    producer: FakeProcess = w.producers[0]  # type: ignore[assignment]
    producer.close = lambda: (_ for _ in ()).throw(KeyboardInterrupt())  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        w.close()
    assert_closed(producer.writer)
    assert_closed(w.consumers[0].writer)  # type: ignore[attr-defined]
