"""Broker and ZooKeeper configuration, rendered per Kafka version, and checks on user overrides.

Kafka 0.9 has one listener per broker, named by `advertised.host.name`, which clients and other
brokers alike use; 0.10.2 and later are configured through `listeners`/`advertised.listeners`.
Either way the advertised address is the broker container's IP on the project's network, which the
host reaches directly.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from harness.errors import ConfigError

BROKER_PORT = 9092
ZK_CLIENT_PORT = 2181

ConfigValue = str | int | bool

# Keys whose values the harness derives from the cluster layout; a user override would break it.
MANAGED_KEYS = frozenset(
    {
        "broker.id",
        "zookeeper.connect",
        "port",
        "host.name",
        "advertised.host.name",
        "advertised.port",
        "listeners",
        "advertised.listeners",
        "log.dirs",
        "log.dir",
    }
)

# Durability-relevant keys checked before any container starts (Kafka checks the rest at startup).
_INT_KEYS = frozenset(
    {
        "min.insync.replicas",
        "replica.lag.time.max.ms",
        "zookeeper.session.timeout.ms",
        "zookeeper.connection.timeout.ms",
        "default.replication.factor",
        "num.partitions",
        "num.replica.fetchers",
        "replica.lag.max.messages",
        "controlled.shutdown.max.retries",
        "log.flush.interval.messages",
        "log.flush.interval.ms",
        "replica.fetch.wait.max.ms",
        "offsets.topic.replication.factor",
        "request.timeout.ms",
        "controller.socket.timeout.ms",
    }
)
_BOOL_KEYS = frozenset(
    {
        "unclean.leader.election.enable",
        "auto.create.topics.enable",
        "controlled.shutdown.enable",
        "auto.leader.rebalance.enable",
        "delete.topic.enable",
    }
)


@dataclass(frozen=True, order=True)
class KafkaVersion:
    parts: tuple[int, ...]

    @classmethod
    def parse(cls, text: str) -> KafkaVersion:
        numbers = re.findall(r"\d+", text.split("-")[0])
        if not numbers:
            raise ConfigError(f"cannot read a Kafka version from {text!r}")
        return cls(tuple(int(n) for n in numbers[:4]))

    def at_least(self, *parts: int) -> bool:
        return self.parts >= parts

    @property
    def uses_listeners(self) -> bool:
        return self.at_least(0, 10, 2)

    @property
    def unclean_election_default(self) -> bool:
        """`unclean.leader.election.enable` defaults to true before 0.11 and false from 0.11 on."""
        return not self.at_least(0, 11)

    def __str__(self) -> str:
        return ".".join(str(p) for p in self.parts)


def format_value(value: ConfigValue) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def validate_overrides(overrides: Mapping[str, ConfigValue], known_keys: Iterable[str], version: str) -> None:
    """Reject overrides that cannot work, naming the key: managed, unknown to this version, or mistyped."""
    known = set(known_keys)
    for key, value in overrides.items():
        if key in MANAGED_KEYS:
            raise ConfigError(
                f"broker config {key!r} is set by kafka-chaos from the cluster layout; remove it"
            )
        if known and key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"broker config {key!r} is not a Kafka {version} broker setting{hint}")
        text = format_value(value)
        if key in _INT_KEYS and not re.fullmatch(r"-?\d+", text):
            raise ConfigError(f"broker config {key!r} must be an integer, got {value!r}")
        if key in _BOOL_KEYS and text not in ("true", "false"):
            raise ConfigError(f"broker config {key!r} must be true or false, got {value!r}")
        if key == "min.insync.replicas" and int(text) < 1:
            raise ConfigError(f"broker config 'min.insync.replicas' must be at least 1, got {value!r}")


def render_broker_config(
    version: KafkaVersion,
    broker_id: int,
    ip: str,
    zookeeper_ips: list[str],
    broker_count: int,
    overrides: Mapping[str, ConfigValue],
) -> str:
    internal_rf = min(3, broker_count)
    settings: dict[str, ConfigValue] = {
        "broker.id": broker_id,
        "zookeeper.connect": ",".join(f"{zk}:{ZK_CLIENT_PORT}" for zk in zookeeper_ips),
        "log.dirs": "/var/lib/kafka/data",
        "auto.create.topics.enable": False,  # a write to a missing topic must fail, not create it
        "delete.topic.enable": True,
        "zookeeper.session.timeout.ms": 6000,
        "zookeeper.connection.timeout.ms": 6000,
        "offsets.topic.replication.factor": internal_rf,
        "offsets.topic.num.partitions": 5,
        "num.partitions": 1,
    }
    if version.uses_listeners:
        settings["listeners"] = f"PLAINTEXT://0.0.0.0:{BROKER_PORT}"
        settings["advertised.listeners"] = f"PLAINTEXT://{ip}:{BROKER_PORT}"
    else:
        settings["port"] = BROKER_PORT
        settings["advertised.host.name"] = ip
        settings["advertised.port"] = BROKER_PORT
    if version.at_least(0, 11):
        settings["group.initial.rebalance.delay.ms"] = 0
        settings["transaction.state.log.replication.factor"] = internal_rf
        settings["transaction.state.log.min.isr"] = min(2, internal_rf)
    settings.update(overrides)
    return "".join(f"{key}={format_value(value)}\n" for key, value in settings.items())


def render_zookeeper_config(zookeeper_ips: list[str]) -> str:
    lines = [
        "dataDir=/var/lib/zookeeper",
        f"clientPort={ZK_CLIENT_PORT}",
        "tickTime=2000",
        "initLimit=10",
        "syncLimit=5",
        "maxClientCnxns=0",
    ]
    if len(zookeeper_ips) > 1:
        lines += [f"server.{i}={ip}:2888:3888" for i, ip in enumerate(zookeeper_ips, start=1)]
    return "\n".join(lines) + "\n"
