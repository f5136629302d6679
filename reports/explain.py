"""Plain-language explanations shown next to anomalies, faults, guarantees and counts.

Written for a Kafka operator who has never seen the history format: what it means, and why it
matters. Kept here so every page (run report, index, JUnit evidence) says the same thing.
"""

from __future__ import annotations

from harness.anomaly_kinds import BY_ID

GUARANTEES: dict[str, str] = {
    "no-lost-acked-writes": "Acknowledged writes are neither lost nor overwritten.",
    "no-phantom-writes": "A write that failed definitely is never read.",
    "no-duplicates": "No value appears at two offsets.",
    "per-partition-order": "Acknowledged writes of one producer to one partition keep their order.",
    "no-unexpected-values": "Every value read was written by the workload.",
}

VERDICTS: dict[str, str] = {
    "held": "the promise was kept",
    "violated": "the configuration promised this and the run broke it",
    "not-promised": "this configuration does not promise it; counts are shown for information",
    "unknown": "the final read was incomplete, so this cannot be judged",
}

# Longest key contained in the fault's name wins ("isolate-from-zookeeper" before "isolate").
FAULTS: dict[str, str] = {
    "kill": "The broker process is killed with SIGKILL: no clean shutdown, no leadership handover. "
    "It is restarted when the fault heals.",
    "stop": "The broker is shut down cleanly (SIGTERM): it hands over leadership before it exits.",
    "pause": "The broker process is frozen (SIGSTOP) and later resumed: like a long GC pause. It "
    "keeps its ZooKeeper session until that times out, then wakes up believing it is still leader.",
    "partition": "The network is cut between groups of nodes; each node keeps running.",
    "isolate": "The target is cut off from every other node (brokers and ZooKeeper) but keeps running.",
    "isolate-from-zookeeper": "The target still reaches the other brokers but not ZooKeeper: its "
    "session expires and the controller moves its leaderships elsewhere.",
    "isolate-from-followers": "The leader keeps ZooKeeper but cannot reach its followers: the ISR "
    "shrinks to the leader alone, and acks=all with min.insync.replicas=1 acknowledges on one copy.",
    "halves": "The cluster is split in two halves that cannot reach each other.",
    "ring": "Each node reaches only its neighbours in a ring: no two nodes see the same majority.",
    "bridge": "Two halves that cannot reach each other, joined by one node that reaches both.",
    "slow": "Network delay (netem) is added to the target's traffic: requests time out and replicas lag.",
    "lossy": "A share of the target's packets is dropped (netem): retries, timeouts, ISR churn.",
    "rolling-restart": "Brokers are restarted one after another, as in an upgrade: every leadership moves.",
}

FAULT_FALLBACK = "A fault injected by the scenario (see the scenario's definition)."


def fault_explanation(name: str) -> str:
    matches = [key for key in FAULTS if key in name]
    return FAULTS[max(matches, key=len)] if matches else FAULT_FALLBACK


def anomaly_title(kind_id: str) -> str:
    return BY_ID[kind_id].title if kind_id in BY_ID else kind_id


def anomaly_explanation(kind_id: str) -> str:
    return BY_ID[kind_id].explanation if kind_id in BY_ID else "An anomaly reported by the checker."
