"""Broker, KRaft controller and ZooKeeper configuration, rendered per Kafka version, and checks on
user overrides.

Kafka 0.9 has one listener per broker, named by `advertised.host.name`, which clients and other
brokers alike use; 0.10.2 and later are configured through `listeners`/`advertised.listeners`.
Either way the advertised address is the broker container's IP on the project's network, which the
host reaches directly. In KRaft mode (3.3 and later; the only mode from 4.0) a node's
`process.roles` says whether it is a broker, a controller or both; the controllers listen on
CONTROLLER_PORT and `controller.quorum.voters` names them all.

Overrides are data: `render_properties` writes one `key=value` line per setting, escaped the way
java.util.Properties reads it back (backslashes doubled, non-ASCII as \\uXXXX), and refuses control
characters, so no value can add or cut a line and Kafka reads exactly the value run.json records.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from contract.errors import ConfigError
from contract.limits import brief

BROKER_PORT = 9092
CONTROLLER_PORT = 9093
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
        "node.id",
        "process.roles",
        "controller.quorum.voters",
        "controller.quorum.bootstrap.servers",
        "controller.listener.names",
        "listener.security.protocol.map",
        "inter.broker.listener.name",
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

DATA_DIR = "/var/lib/kafka/data"
"""The brokers' one log directory (log.dirs): a partition's segments and the offset checkpoints."""
ZOOKEEPER_DATA_DIR = "/var/lib/zookeeper"
"""A ZooKeeper node's dataDir: its snapshots and transaction log, and myid."""
KAFKA_LOG_DIR = "/var/log/kafka"
"""Where the image's entrypoint has log4j write server.log, state-change.log and controller.log."""


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
    def has_kraft(self) -> bool:
        """KRaft is production-ready from 3.3 (KIP-833)."""
        return self.at_least(3, 3)

    @property
    def has_zookeeper(self) -> bool:
        """ZooKeeper mode was removed in 4.0 (KIP-833)."""
        return not self.at_least(4)

    @property
    def topic_command(self) -> str:
        """The main class of kafka-topics: moved from the broker to the tools module in 3.7."""
        return "org.apache.kafka.tools.TopicCommand" if self.at_least(3, 7) else "kafka.admin.TopicCommand"

    @property
    def unclean_election_default(self) -> bool:
        """`unclean.leader.election.enable` defaults to true before 0.11 and false from 0.11 on."""
        return not self.at_least(0, 11)

    def __str__(self) -> str:
        return ".".join(str(p) for p in self.parts)


# A property name as Kafka spells them; nothing in it needs escaping in a properties file.
_KEY_SHAPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def format_value(value: ConfigValue) -> str:
    """The text of a setting, as rendered for the brokers and recorded in run.json."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def format_settings(settings: Mapping[str, ConfigValue]) -> dict[str, str]:
    return {key: format_value(value) for key, value in settings.items()}


def check_override_syntax(overrides: Mapping[str, ConfigValue]) -> None:
    """Reject keys that are not property names and values with control characters, naming the key.

    Needs no image, so a scenario or CLI option fails before anything is built or started."""
    for key, value in overrides.items():
        if not isinstance(key, str) or not _KEY_SHAPE.fullmatch(key):
            raise ConfigError(
                f"broker config key {key!r} is not a property name "
                "(letters, digits, '.', '_' and '-', e.g. min.insync.replicas)"
            )
        _check_value_text(key, format_value(value))


def _check_value_text(key: str, text: str) -> None:
    bad = next((c for c in text if ord(c) < 0x20 or ord(c) == 0x7F), None)
    if bad is not None:
        raise ConfigError(
            f"broker config {key!r}: the value {text!r} contains the control character {bad!r}; "
            "a properties file would read it as a line break or drop it"
        )


def escape_value(key: str, text: str) -> str:
    """`text` as a java.util.Properties value: read back by Kafka as exactly `text`."""
    _check_value_text(key, text)
    escaped: list[str] = []
    for i, char in enumerate(text):
        if char == "\\":
            escaped.append("\\\\")
        elif char == " " and i == 0:  # Properties drops the whitespace before a value
            escaped.append("\\ ")
        elif ord(char) > 0x7E:  # Properties reads files as ISO-8859-1: anything else as \uXXXX
            units = char.encode("utf-16-be")
            escaped += [f"\\u{units[j]:02x}{units[j + 1]:02x}" for j in range(0, len(units), 2)]
        else:
            escaped.append(char)
    return "".join(escaped)


def render_properties(settings: Mapping[str, ConfigValue]) -> str:
    """One `key=value` line per setting, values escaped (`escape_value`); ConfigError names a bad key."""
    check_override_syntax(settings)
    return "".join(f"{key}={escape_value(key, format_value(value))}\n" for key, value in settings.items())


def validate_overrides(overrides: Mapping[str, ConfigValue], known_keys: Iterable[str], version: str) -> None:
    """Reject overrides that cannot work, naming the key: not a property name, a value with control
    characters, managed, unknown to this version, or mistyped."""
    check_override_syntax(overrides)
    known = set(known_keys)
    for key, value in overrides.items():
        if key in MANAGED_KEYS:
            raise ConfigError(
                f"broker config {key!r} is set by kafka-chaos from the cluster layout; remove it"
            )
        if known and key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"broker config {brief(key)} is not a Kafka {version} broker setting{hint}")
        text = format_value(value)
        if key in _INT_KEYS and not re.fullmatch(r"-?\d+", text):
            raise ConfigError(f"broker config {key!r} must be an integer, got {brief(value)}")
        if key in _BOOL_KEYS and text not in ("true", "false"):
            raise ConfigError(f"broker config {key!r} must be true or false, got {brief(value)}")
        if key == "min.insync.replicas" and int(text) < 1:
            raise ConfigError(f"broker config 'min.insync.replicas' must be at least 1, got {brief(value)}")


@dataclass(frozen=True)
class KRaftRole:
    """A node's part in a KRaft cluster: its `process.roles` and the quorum's voters."""

    roles: tuple[str, ...]
    """("broker",), ("controller",) or ("broker", "controller") for a combined node."""
    voters: tuple[tuple[int, str], ...]
    """(node id, IP) of every controller."""

    @property
    def voters_text(self) -> str:
        return ",".join(f"{node_id}@{ip}:{CONTROLLER_PORT}" for node_id, ip in self.voters)


def render_broker_config(
    version: KafkaVersion,
    broker_id: int,
    ip: str,
    zookeeper_ips: list[str],
    broker_count: int,
    overrides: Mapping[str, ConfigValue],
    kraft: KRaftRole | None = None,
) -> str:
    """server.properties of one node: the layout, the harness's defaults, then `overrides`."""
    return render_properties(
        broker_settings(version, broker_id, ip, zookeeper_ips, broker_count, overrides, kraft)
    )


def broker_settings(
    version: KafkaVersion,
    broker_id: int,
    ip: str,
    zookeeper_ips: list[str],
    broker_count: int,
    overrides: Mapping[str, ConfigValue],
    kraft: KRaftRole | None = None,
) -> dict[str, str]:
    """Every setting of one node as text, in file order (overrides last, replacing defaults): a broker
    of a ZooKeeper cluster (`kraft` None: `zookeeper_ips` is the ensemble), or a KRaft node, broker,
    controller or both. A controller gets the overrides too: in KRaft it is the controller that
    elects leaders, so settings such as unclean.leader.election.enable act there."""
    internal_rf = min(3, broker_count)
    settings: dict[str, ConfigValue]
    if kraft is None:
        settings = {
            "broker.id": broker_id,
            "zookeeper.connect": ",".join(f"{zk}:{ZK_CLIENT_PORT}" for zk in zookeeper_ips),
        }
    else:
        settings = {
            "node.id": broker_id,
            "process.roles": ",".join(kraft.roles),
            "controller.quorum.voters": kraft.voters_text,
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        }
    settings |= {
        "log.dirs": DATA_DIR,
        "auto.create.topics.enable": False,  # a write to a missing topic must fail, not create it
        "delete.topic.enable": True,
        "offsets.topic.replication.factor": internal_rf,
        "offsets.topic.num.partitions": 5,
        "num.partitions": 1,
    }
    if kraft is None:
        settings |= {"zookeeper.session.timeout.ms": 6000, "zookeeper.connection.timeout.ms": 6000}
    if kraft is not None:
        is_broker = "broker" in kraft.roles
        listeners = [f"PLAINTEXT://0.0.0.0:{BROKER_PORT}"] if is_broker else []
        if "controller" in kraft.roles:
            listeners.append(f"CONTROLLER://0.0.0.0:{CONTROLLER_PORT}")
        settings["listeners"] = ",".join(listeners)
        if is_broker:
            settings["advertised.listeners"] = f"PLAINTEXT://{ip}:{BROKER_PORT}"
            settings["inter.broker.listener.name"] = "PLAINTEXT"
    elif version.uses_listeners:
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
    return format_settings(settings)


def render_zookeeper_config(zookeeper_ips: list[str]) -> str:
    settings: dict[str, ConfigValue] = {
        "dataDir": ZOOKEEPER_DATA_DIR,
        "clientPort": ZK_CLIENT_PORT,
        "tickTime": 2000,
        "initLimit": 10,
        "syncLimit": 5,
        "maxClientCnxns": 0,
    }
    if len(zookeeper_ips) > 1:
        settings |= {f"server.{i}": f"{ip}:2888:3888" for i, ip in enumerate(zookeeper_ips, start=1)}
    return render_properties(settings)
