"""Each supported Kafka release line, resolved from Maven Central and run for real: a cluster up,
1,000 acks=all writes read back across a leader's crash and restart, in ZooKeeper mode and KRaft;
the KRaft quorum's own faults; and what a release that cannot be had says.

The rest of the suite runs on tests/conftest.py's SUITE_KAFKA; `make releases` runs scenarios on
every line (docs/RELEASES.md).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from contract.errors import ClusterError
from faults import make_fault
from faults.base import FaultContext
from harness.cluster import ClusterSpec, KafkaCluster
from harness.cluster_state import ClusterSnapshot
from harness.waiting import wait_until
from kchaos.cli import main
from kchaos.smoke import SMOKE_TOPIC, run_smoke

pytestmark = pytest.mark.docker

RELEASE_LINES = [
    ("0.11.0.3", "zookeeper"),  # leader epochs (KIP-101), the idempotent producer (KIP-98)
    ("2.8.2", "zookeeper"),  # the last 2.x; KIP-279 and KIP-320 in
    ("3.9.2", "zookeeper"),  # the newest with ZooKeeper: the default release
    ("3.9.2", "kraft"),
    ("4.1.1", "kraft"),  # KRaft only; Eligible Leader Replicas on for new clusters
]
"""0.9.0.1, the suite's own release, has its smoke in test_cluster.py."""


@pytest.mark.parametrize(("release", "metadata"), RELEASE_LINES)
def test_release_line_round_trip_across_a_leader_crash(release: str, metadata: str) -> None:
    result = run_smoke(1000, kafka=release, metadata=metadata)
    assert result.kafka_version == release
    assert (result.sent, result.acked, result.read_back) == (1000, 1000, 1000)
    assert result.new_leader not in (result.killed_leader, -1)
    state = result.state
    assert state.live_brokers == (1, 2, 3)
    assert len(state.partitions) == 3 and all(p.isr_full for p in state.partitions), state.describe()
    assert state.controller == (101 if metadata == "kraft" else state.controller)  # controller-1 in KRaft
    assert state.controller is not None and state.controller_epoch is not None and state.controller_epoch >= 1
    assert state.partition(SMOKE_TOPIC, 0) is not None


def _quorum(cluster: KafkaCluster) -> ClusterSnapshot:
    return cluster.state([])


def test_kraft_quorum_elects_a_new_controller_when_the_active_one_dies_and_survives_a_follower_pause() -> (
    None
):
    spec = ClusterSpec(brokers=3, kafka="3.9.2", metadata="kraft", controllers=3)
    with KafkaCluster(spec) as cluster:
        assert [n.name for n in cluster.voters] == ["controller-1", "controller-2", "controller-3"]
        before = _quorum(cluster)
        assert before.controller in (101, 102, 103) and before.controller_epoch is not None

        kill = make_fault("kill", {"target": "controller"})
        kill.start(FaultContext(cluster), random.Random(1))
        killed = kill.targets
        assert killed == [f"controller-{before.controller - 100}"]

        def new_controller() -> tuple[bool, str]:
            try:
                now = _quorum(cluster)
            except ClusterError as exc:
                return False, str(exc)
            moved = now.controller not in (None, before.controller)
            return moved and (
                now.controller_epoch or 0
            ) > before.controller_epoch, f"{now.controller} {now.controller_epoch}"

        wait_until(new_controller, what="another controller elected with a newer epoch", timeout_s=60)
        kill.heal(FaultContext(cluster))
        cluster.create_topic("after-failover", partitions=1, replication_factor=3)  # the new controller works

        pause = make_fault("pause", {"target": "quorum-follower"})
        pause.start(FaultContext(cluster), random.Random(2))
        (paused,) = pause.targets
        assert paused in ("controller-1", "controller-2", "controller-3")
        assert paused != f"controller-{_quorum(cluster).controller - 100}"  # type: ignore[operator]
        cluster.create_topic("follower-paused", partitions=1, replication_factor=3)  # a majority still acts
        pause.heal(FaultContext(cluster))


def test_losing_the_quorums_majority_stops_the_metadata_but_not_the_brokers() -> None:
    spec = ClusterSpec(brokers=3, kafka="4.1.1", controllers=3, combined=True)
    with KafkaCluster(spec) as cluster:
        assert cluster.kraft and not cluster.controllers  # 4.x: KRaft by default; combined: brokers vote
        assert [n.name for n in cluster.voters] == ["kafka-1", "kafka-2", "kafka-3"]
        pause = make_fault("pause", {"target": "quorum-majority"})
        pause.start(FaultContext(cluster), random.Random(3))
        assert len(pause.targets) == 2
        (running,) = [b for b in cluster.brokers if b.name not in pause.targets]
        with pytest.raises(ClusterError):  # no controller: a topic cannot be created
            cluster.create_topic("no-quorum", partitions=1, replication_factor=1, timeout_s=15)
        pause.heal(FaultContext(cluster))
        cluster.wait_for_brokers(timeout_s=60)
        cluster.create_topic("quorum-back", partitions=1, replication_factor=3)
        assert running.status() == "running"


def test_a_kraft_run_samples_the_quorum_and_checks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "leader-kill", "--kafka", "4.1.1", "--duration", "30", "--out", str(tmp_path)])
    said = capsys.readouterr()
    assert code in (0, 1), said.out + said.err  # a verdict, whatever it is
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    run = json.loads((run_dir / "run.json").read_text())
    assert (
        run["kafka"]["version"] == "4.1.1"
        and run["kafka"]["source"] == "maven:org.apache.kafka:kafka_2.13:4.1.1"
    )
    assert run["kafka"]["java"].startswith("openjdk version")
    assert run["cluster"]["metadata"] == "kraft" and run["cluster"]["zookeepers"] == 0
    samples = [json.loads(line) for line in (run_dir / "history/cluster.jsonl").read_text().splitlines()]
    faults = [
        json.loads(line)["time_ns"] for line in (run_dir / "history/faults.jsonl").read_text().splitlines()
    ]
    # The sampler ran through the chaos: it starts before the workload, the first fault at least 5 s
    # after it (a quiet gap of 10 s jittered by half), and it samples on through settle and final
    # read, when every node answers at once.
    assert samples[0]["time_ns"] < min(faults) < max(faults) < samples[-1]["time_ns"]
    # Each sample names controller-1 (101) with its epoch, or says it is unknown and why: every
    # node asked, the controller twice (HISTORY_FORMAT.md, cluster.jsonl). Most name it.
    named = [s for s in samples if s["controller"] is not None]
    assert {(s["controller"], s["controller_epoch"] >= 1) for s in named} == {(101, True)}
    for unknown in (s for s in samples if s["controller"] is None):
        assert unknown["controller_epoch"] is None, unknown
        said = unknown["controller_unknown"]
        assert said.count("controller 101 in ") == 2 and all(f"broker {b} in " in said for b in (1, 2, 3)), (
            said
        )
    assert len(named) > len(samples) / 2, f"{len(samples) - len(named)} of {len(samples)} samples unknown"
    epochs = [p["leader_epoch"] for s in samples for p in s["partitions"]]
    assert max(epochs) >= 1  # the killed leaders' partitions moved on
    # Eligible Leader Replicas (KIP-966, on by default for a new 4.1 cluster), where the answer was
    # of the merged leader epoch: most samples, not those taken as a leader moved
    states = [p for s in samples for p in s["partitions"]]
    assert sum(isinstance(p.get("elr"), list) for p in states) > len(states) / 2
    result = json.loads((run_dir / "check/result.json").read_text())
    held = {g["id"]: g["verdict"] for g in result["guarantees"] if g["acks"] == "all"}
    assert held["no-lost-acked-writes"] == "held" and held["epochs-advance"] == "held"


def test_a_release_that_cannot_be_had_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["images", "build", "--kafka", "3.9.99"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "error: Kafka 3.9.99: Maven Central has no org.apache.kafka:kafka_2.13:3.9.99; "
        "is it a released version (e.g. 3.9.1, 2.8.2, 0.11.0.3)?"
    ]
    assert main(["images", "build", "--kafka", "2.3.1"]) == 2  # ZooKeeper 3.4.14's client on Java 17
    err = capsys.readouterr().err
    assert "Kafka 2.3.1 does not start on Java 17" in err and "apache/zookeeper#1509" in err
    assert main(["cluster", "smoke", "--kafka", "2.8.2", "--metadata", "kraft"]) == 2
    assert "kraft needs Kafka 3.3 or later (KIP-833); this is Kafka 2.8.2" in capsys.readouterr().err
