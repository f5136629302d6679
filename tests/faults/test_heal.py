"""`kchaos heal RUN_ID`: what it removes, computed from `iptables -S` (pure), and on a real cluster
whose faults were started and never healed."""

from __future__ import annotations

import random
import re

import pytest
from faultkit import TOPIC, make_topic, produce

from faults import make_fault
from faults.base import FaultContext
from faults.iptables import leftover_rules, removal_commands
from harness.cluster import KafkaCluster
from kchaos.cli import main

IPTABLES_S = """\
-P INPUT ACCEPT
-P FORWARD ACCEPT
-P OUTPUT ACCEPT
-N KCHAOS-PART-4711-1
-N KCHAOS-LOSS-99-3
-N DOCKER-USER
-A INPUT -j KCHAOS-LOSS-99-3
-A INPUT -j KCHAOS-PART-4711-1
-A INPUT -s 10.0.0.1/32 -j DOCKER-USER
-A FORWARD -g KCHAOS-LOSS-99-3
-A OUTPUT -j KCHAOS-PART-4711-1
-A KCHAOS-PART-4711-1 -s 172.28.0.11/32 -j DROP
-A KCHAOS-LOSS-99-3 ! -d 127.0.0.0/8 -m statistic --mode random --probability 0.2000 -j DROP
-A DOCKER-USER -j RETURN
"""


def test_removal_takes_every_chain_of_ours_and_every_jump_to_it_and_nothing_else() -> None:
    chains, commands = removal_commands(IPTABLES_S)
    assert chains == ["KCHAOS-PART-4711-1", "KCHAOS-LOSS-99-3"]
    assert commands == [
        ["iptables", "-D", "INPUT", "-j", "KCHAOS-LOSS-99-3"],
        ["iptables", "-D", "INPUT", "-j", "KCHAOS-PART-4711-1"],
        ["iptables", "-D", "FORWARD", "-g", "KCHAOS-LOSS-99-3"],
        ["iptables", "-D", "OUTPUT", "-j", "KCHAOS-PART-4711-1"],
        ["iptables", "-F", "KCHAOS-PART-4711-1"],
        ["iptables", "-F", "KCHAOS-LOSS-99-3"],
        ["iptables", "-X", "KCHAOS-PART-4711-1"],
        ["iptables", "-X", "KCHAOS-LOSS-99-3"],
    ]
    assert removal_commands("-P INPUT ACCEPT\n-N DOCKER-USER\n-A DOCKER-USER -j RETURN\n") == ([], [])


@pytest.mark.docker
def test_heal_undoes_faults_whose_own_heal_never_ran(
    cluster: KafkaCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    make_topic(cluster)
    rng = random.Random(3)
    # As a `kchaos fault` killed mid-way leaves them: started, never healed.
    partition = make_fault("partition", {"shape": "isolate", "target": "kafka-1"})
    partition.start(FaultContext(cluster), rng)
    make_fault("pause", {"target": "kafka-2"}).start(FaultContext(cluster), rng)
    make_fault("kill", {"target": "kafka-3"}).start(FaultContext(cluster), rng)
    assert leftover_rules(cluster.node("kafka-1")) and leftover_rules(cluster.node("zk-1"))
    assert [n.status() for n in cluster.brokers] == ["running", "paused", "exited"]
    _, errors = produce(cluster, cluster.brokers[0].ip + ":9092", "all", timeout_ms=3000)
    assert errors, "with every broker faulted an acks=all write cannot succeed"

    assert main(["heal", cluster.run_id]) == 0
    out = capsys.readouterr().out
    for healed in (
        r"healed kafka-2: resumed \(was paused\)",
        r"healed kafka-1: removed iptables chains KCHAOS-PART-\d+-\d+\n",
        r"healed zk-1: removed iptables chains KCHAOS-PART-\d+-\d+\n",
        r"healed kafka-3: started again \(was exited, exit code 137\)",
    ):
        assert re.search(healed, out), out
    assert re.search(r"live brokers: \[1, 2, 3\]", out), out

    assert all(not leftover_rules(node) for node in cluster.nodes)
    assert [n.status() for n in cluster.nodes] == ["running"] * 4
    latencies, errors = produce(cluster, cluster.bootstrap_servers, "all", count=20, timeout_ms=30000)
    assert len(latencies) == 20 and not errors, errors[:3]
    assert cluster.wait_for_isr([TOPIC], timeout_s=60).partition(TOPIC, 0) is not None

    assert main(["heal", cluster.run_id]) == 0  # nothing left: says so
    assert f"nothing to heal on {cluster.run_id}" in capsys.readouterr().out
