"""The cluster foundation against real Kafka 0.9 clusters in real containers.

Every test checks what Docker itself reports by the `kchaos.run=<run id>` label, so "nothing left"
means no container and no network of that run exist, whatever the harness believes.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from contract.errors import ConfigError
from contract.history import new_run_id
from harness import cluster as cluster_module
from harness import docker_env
from harness.clients import client_config
from harness.cluster import ClusterSpec, KafkaCluster
from harness.images import KafkaImage
from harness.waiting import wait_until
from kchaos.cli import main
from kchaos.smoke import run_smoke

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[2]
ClusterFactory = Callable[..., KafkaCluster]  # the `cluster_factory` fixture of tests/conftest.py


def labelled(run_id: str) -> tuple[list[str], list[str]]:
    """Names of the containers (any state) and networks Docker holds with this run's label."""
    client = docker_env.client()
    selector = {"label": f"{docker_env.RUN_LABEL}={run_id}"}
    containers = sorted(c.name for c in client.containers.list(all=True, filters=selector))
    networks = sorted(n.name for n in client.networks.list(filters=selector))
    return containers, networks


def labelled_networks(run_id: str) -> list[Any]:
    return list(docker_env.client().networks.list(filters={"label": f"{docker_env.RUN_LABEL}={run_id}"}))


def assert_nothing_left(run_id: str) -> None:
    containers, networks = labelled(run_id)
    assert not containers and not networks, f"run {run_id} left containers {containers} networks {networks}"


@pytest.fixture
def run_id() -> Iterator[str]:
    """A fresh run id; whatever a failing test leaves under it is removed afterwards."""
    rid = new_run_id("test")
    yield rid
    docker_env.remove_labelled(rid)


def round_trip(cluster: KafkaCluster, topic: str, count: int, tag: str) -> list[bytes]:
    """Write `count` acks=all messages tagged `tag` and read back everything in the topic."""
    base = client_config(cluster.bootstrap_servers, cluster.kafka_version)
    errors: list[str] = []
    producer = Producer({**base, "acks": "all", "message.timeout.ms": 30000})
    for i in range(count):
        producer.produce(
            topic, f"{tag}-{i}".encode(), on_delivery=lambda err, _m: errors.append(str(err)) if err else None
        )
    assert producer.flush(30) == 0, "messages still in flight after 30 s"
    assert not errors, errors[:3]
    consumer = Consumer({**base, "group.id": f"test-{tag}", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    seen: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(seen) < count and time.monotonic() < deadline:
        for msg in consumer.consume(500, timeout=0.5):
            value = msg.value()
            if msg.error() is None and value is not None:
                seen.append(value)
    consumer.close()
    return seen


# -- lifecycle ------------------------------------------------------------------------------------
def test_up_and_down_leaves_nothing(kafka_image: KafkaImage, run_id: str) -> None:
    with KafkaCluster(ClusterSpec(image=kafka_image.tag), run_id=run_id) as cluster:
        containers, networks = labelled(run_id)
        assert containers == sorted(f"{run_id}-{n}" for n in ("zk-1", "kafka-1", "kafka-2", "kafka-3"))
        assert networks == [f"{run_id}-net"]  # the probe network of the subnet pick is gone already
        assert [n.status() for n in cluster.nodes] == ["running"] * 4
        assert cluster.metadata.live_brokers() == (1, 2, 3)
    assert_nothing_left(run_id)
    cluster.close()  # a second close is harmless
    assert_nothing_left(run_id)


@pytest.fixture
def pinned_run_id(run_id: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Make clusters started without a run id (as the smoke test does) use `run_id`."""
    monkeypatch.setattr(cluster_module, "new_run_id", lambda _name: run_id)
    return run_id


def test_smoke_round_trip(pinned_run_id: str) -> None:
    result = run_smoke(1000)
    assert (result.sent, result.acked, result.read_back) == (1000, 1000, 1000)
    assert result.ok
    assert result.state.controller in (1, 2, 3)
    assert result.state.live_brokers == (1, 2, 3)
    assert len(result.state.partitions) == 3
    assert all(p.isr_full for p in result.state.partitions)
    assert result.seconds < 120
    assert_nothing_left(pinned_run_id)


def test_cli_smoke(pinned_run_id: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cluster", "smoke"]) == 0
    out = capsys.readouterr().out
    assert "live brokers: [1, 2, 3]" in out
    assert re.search(r"sent 1000, acked 1000, read back 1000 in [\d.]+ s: OK", out), out
    assert_nothing_left(pinned_run_id)


def test_cli_up_status_down(kafka_image: KafkaImage, capsys: pytest.CaptureFixture[str]) -> None:
    started: list[str] = []
    try:
        code = main(
            [
                "cluster",
                "up",
                "--brokers",
                "2",
                "--image",
                kafka_image.tag,
                "--name",
                "clitest",
                "--config",
                "min.insync.replicas=2",
            ]
        )
        out = capsys.readouterr().out
        match = re.search(r"run id:\s+(\S+)", out)
        assert code == 0 and match, out
        rid = match.group(1)
        started.append(rid)
        assert "-clitest-" in rid
        assert f"kchaos cluster down {rid}" in " ".join(out.split())
        containers, networks = labelled(rid)
        assert len(containers) == 3 and len(networks) == 1  # the cluster outlives the command

        assert main(["cluster", "status", rid]) == 0
        out = capsys.readouterr().out
        assert "live brokers: [1, 2]" in out
        assert re.search(r"controller: kafka-[12] ", out), out
        assert re.search(r"kafka-1\s+\S+\s+running", out) and re.search(r"zk-1\s+\S+\s+running", out), out

        assert main(["cluster", "list"]) == 0
        assert rid in capsys.readouterr().out

        assert main(["cluster", "down", rid]) == 0
        assert "removed 3 containers and 1 networks" in capsys.readouterr().out
        assert_nothing_left(rid)

        assert main(["cluster", "down", rid]) == 2  # a second down says there is nothing
        assert "no cluster with run id" in " ".join(capsys.readouterr().err.split())
    finally:
        for rid in started:
            docker_env.remove_labelled(rid)


# -- faults seen in ZooKeeper -----------------------------------------------------------------------
def test_killed_leader_loses_leadership_and_rejoins_isr(cluster: KafkaCluster) -> None:
    topic = "leader-kill"
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    before = cluster.state([topic]).partition(topic, 0)
    assert before is not None and before.isr_full
    victim = cluster.leader_of(topic, 0)
    assert victim.broker_id == before.leader

    victim.kill()
    assert victim.status() == "exited"

    def moved() -> tuple[bool, str]:
        state = cluster.state([topic])
        p = state.partition(topic, 0)
        assert p is not None
        ok = p.leader not in (-1, victim.broker_id) and victim.broker_id not in p.isr
        return ok and victim.broker_id not in state.live_brokers, state.describe()

    wait_until(moved, what=f"leadership to leave broker {victim.broker_id}", timeout_s=45)
    after = cluster.state([topic]).partition(topic, 0)
    assert after is not None and after.leader_epoch > before.leader_epoch
    assert len(after.isr) == 2

    victim.start()

    def rejoined() -> tuple[bool, str]:
        state = cluster.state([topic])
        p = state.partition(topic, 0)
        assert p is not None
        return victim.broker_id in p.isr and victim.broker_id in state.live_brokers, state.describe()

    wait_until(rejoined, what=f"broker {victim.broker_id} back in the ISR", timeout_s=60)
    assert victim.status() == "running"
    networks = docker_env.client().containers.get(victim.container_name).attrs["NetworkSettings"]["Networks"]
    assert [n["IPAddress"] for n in networks.values()] == [victim.ip]  # same pinned address after restart
    assert len(round_trip(cluster, topic, 50, "after-restart")) == 50


def test_two_clusters_at_once(cluster_factory: ClusterFactory) -> None:
    first = cluster_factory(brokers=2)
    second = cluster_factory(brokers=2)
    assert first.run_id != second.run_id
    first_ips = {n.ip for n in first.nodes}
    second_ips = {n.ip for n in second.nodes}
    assert not first_ips & second_ips
    subnets = [
        {cfg["Subnet"] for n in labelled_networks(c.run_id) for cfg in n.attrs["IPAM"]["Config"]}
        for c in (first, second)
    ]
    assert len(subnets[0]) == len(subnets[1]) == 1 and subnets[0] != subnets[1], subnets
    for c in (first, second):
        c.create_topic("shared-name", partitions=1, replication_factor=2)
    # Same topic name in both: each cluster must hold only its own messages.
    assert sorted(round_trip(first, "shared-name", 40, "first")) == sorted(
        f"first-{i}".encode() for i in range(40)
    )
    assert sorted(round_trip(second, "shared-name", 40, "second")) == sorted(
        f"second-{i}".encode() for i in range(40)
    )
    for c in (first, second):
        c.close()
        assert_nothing_left(c.run_id)


# -- cleanup when things go wrong ------------------------------------------------------------------
def test_exception_inside_with_block_removes_everything(kafka_image: KafkaImage, run_id: str) -> None:
    with (
        pytest.raises(RuntimeError, match="boom"),
        KafkaCluster(ClusterSpec(image=kafka_image.tag, brokers=1), run_id=run_id) as cluster,
    ):
        cluster.create_topic("t", partitions=1, replication_factor=1)
        assert len(labelled(run_id)[0]) == 2
        raise RuntimeError("boom")
    assert_nothing_left(run_id)


_CHILD = """
import sys, time
from harness.cluster import ClusterSpec, KafkaCluster
from kchaos.signals import terminate_as_interrupt
with terminate_as_interrupt(), KafkaCluster(ClusterSpec(image=sys.argv[1], brokers=1), run_id=sys.argv[2]):
    print("UP", flush=True)
    time.sleep(120)
print("not interrupted", flush=True)
"""


def start_child(image: str, run_id: str) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, image, run_id],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ},
    )
    assert child.stdout is not None
    line = child.stdout.readline()  # blocks until the cluster is up or the child dies
    if line.strip() != "UP":
        child.kill()
        pytest.fail(f"child did not bring a cluster up: {line!r}\n{child.communicate(timeout=30)[1][-3000:]}")
    assert len(labelled(run_id)[0]) == 2
    return child


def test_sigterm_removes_everything(kafka_image: KafkaImage, run_id: str) -> None:
    child = start_child(kafka_image.tag, run_id)
    child.send_signal(signal.SIGTERM)
    out, err = child.communicate(timeout=60)
    assert "not interrupted" not in out
    assert "KeyboardInterrupt" in err  # SIGTERM became an interrupt, which unwound the `with`
    assert_nothing_left(run_id)


def test_sigkill_leaves_containers_that_cleanup_removes(
    kafka_image: KafkaImage, run_id: str, capsys: pytest.CaptureFixture[str]
) -> None:
    child = start_child(kafka_image.tag, run_id)
    child.kill()
    child.communicate(timeout=30)
    assert child.returncode == -signal.SIGKILL
    containers, networks = labelled(run_id)
    assert len(containers) == 2 and len(networks) == 1  # nothing can clean up after SIGKILL...
    assert main(["cleanup", "--run", run_id]) == 0  # ...except the cleanup command
    out = capsys.readouterr().out
    assert "removed 2 containers, 1 networks" in out
    assert all(name in out for name in containers + networks)
    assert_nothing_left(run_id)


# -- bad broker config ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("override", "expected"),
    [
        (
            {"min.insync.replica": 2},
            [
                "'min.insync.replica' is not a Kafka 0.9.0.1 broker setting",
                "did you mean 'min.insync.replicas'?",
            ],
        ),
        ({"broker.id": 7}, ["'broker.id' is set by kafka-chaos from the cluster layout"]),
        ({"min.insync.replicas": "abc"}, ["'min.insync.replicas' must be an integer, got 'abc'"]),
    ],
)
def test_bad_override_caught_before_start(
    kafka_image: KafkaImage, run_id: str, override: dict[str, object], expected: list[str]
) -> None:
    assert "min.insync.replicas" in kafka_image.config_keys  # the image knows its version's keys
    cluster = KafkaCluster(
        ClusterSpec(image=kafka_image.tag, brokers=1, broker_config=override),  # type: ignore[arg-type]
        run_id=run_id,
    )
    with pytest.raises(ConfigError) as info:
        cluster.start()
    for text in expected:
        assert text in str(info.value)
    assert_nothing_left(run_id)


def test_bad_override_through_cli(kafka_image: KafkaImage, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "cluster",
            "up",
            "--brokers",
            "1",
            "--image",
            kafka_image.tag,
            "--name",
            "badcfg",
            "--config",
            "min.insync.replica=2",
        ]
    )
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2
    assert "error: broker config 'min.insync.replica'" in err and "did you mean 'min.insync.replicas'?" in err
    leftovers = [
        c.name
        for c in docker_env.client().containers.list(all=True, filters={"label": "kchaos.run"})
        if "-badcfg-" in c.name
    ]
    assert not leftovers


@pytest.mark.parametrize("key", ["num.network.threads", "log.retention.hours"])
def test_value_rejected_by_kafka_names_key_from_broker_log(
    kafka_image: KafkaImage, run_id: str, key: str
) -> None:
    started = time.monotonic()
    kept: dict[str, str] = {}  # what a run keeps of a failed start (harness/experiment.py)
    cluster = KafkaCluster(
        ClusterSpec(image=kafka_image.tag, brokers=1, broker_config={key: "abc"}),
        run_id=run_id,
        start_timeout_s=60,
        on_failed_start=lambda failed: kept.update({n.name: n.logs(tail="all") for n in failed.nodes}),
    )
    with pytest.raises(ConfigError) as info:
        cluster.start()
    message = str(info.value)
    assert f"broker config {key!r}: Kafka rejected value 'abc'" in message
    assert key in kept["kafka-1"], f"the hook ran after the broker's container was gone: {kept}"
    assert "number" in message.lower()  # Kafka's own reason, e.g. "Not a number of type INT"
    assert time.monotonic() - started < 50, "the exited broker should fail the start fast, not time out"
    assert_nothing_left(run_id)
