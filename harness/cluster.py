"""`KafkaCluster`: N Kafka brokers and their metadata quorum (a ZooKeeper ensemble, or KRaft
controllers: dedicated, or combined with brokers) on one Docker network, as a context manager.

Every container and the network carry `kchaos.run=<run id>`; leaving the `with` block in any way
(normal exit, exception, Ctrl-C, SIGTERM turned into an exception by `kchaos.signals`) removes
them, and so does a failed start. Addresses are pinned per node so that two clusters can run side
by side (no host ports are published: the host reaches container IPs directly).
"""

from __future__ import annotations

import base64
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from testcontainers.core.network import Network

from contract.errors import ClusterError, ConfigError, Failures
from contract.history import new_run_id
from contract.history_fields import DISKS, METADATA_MODES
from contract.nodes import CONTROLLER_ID_BASE
from harness import docker_env
from harness.broker_config import (
    BROKER_PORT,
    CONTROLLER_PORT,
    DATA_DIR,
    ZK_CLIENT_PORT,
    ZOOKEEPER_DATA_DIR,
    ConfigValue,
    KafkaVersion,
    KRaftRole,
    check_override_syntax,
    format_settings,
    format_value,
    render_broker_config,
    render_zookeeper_config,
    validate_overrides,
)
from harness.cluster_state import ClusterSnapshot, MetadataReader
from harness.images import LOCAL_BASE_IMAGE, KafkaDistribution, KafkaImage, ensure_kafka_image
from harness.kraft_state import QUORUM_RETRY_TIMEOUT_S, Endpoint, KRaftStateReader, quorum_answer
from harness.lossy import mounts as lossy_mounts
from harness.run_network import NO_NETWORK, create_network
from harness.services import KafkaBroker, KafkaLaunch, KRaftController, Node, ZooKeeperNode
from harness.waiting import wait_until
from harness.zkstate import ZkStateReader, zookeeper_serving

N = TypeVar("N", bound=Node)

ATTACHED = KafkaLaunch("", "")
"""The launch of a node attached to, not started: its container already holds how it started."""
TIMED_OUT = 124
"""The exit code of `timeout`, which Node.exec runs a command under."""
_FEATURE_NAME = re.compile(r"[a-z][a-z0-9._-]*")
_CONFIG_REJECTED = re.compile(
    r"Invalid value (?P<value>.*?) for configuration (?P<key>[\w.]+)(?::\s*(?P<why>.*))?"
)
STARTUP_LOG_LINES = 30
"""Lines of a node's log that the error for its failed start shows."""
_BOOTSTRAP_EMPTIED = "No FeatureLevelRecord for metadata.version was found in the bootstrap metadata"
_BOOTSTRAP_EMPTIED_WHY = (
    "bootstrap.checkpoint is empty: Kafka's format (3.3 to 4.3) never fsyncs it, so a power loss empties "
    "it for good, at any time without `written_back_s`, within about 30 s of format with `written_back_s: "
    '30` (docs/FINDINGS.md, "A KRaft node cannot start after a power loss soon after format"); a power '
    "loss meant to test something else keeps `written_back_s: 30` and comes at `at_s: 30` or later, as "
    "docs/findings/*-at-32s.yaml do"
)


def startup_failure(node: str, logs: str) -> ClusterError | ConfigError:
    """Why `node` exited while starting, from its log: a config value Kafka rejected, or its last
    lines, with what kafka-chaos knows of them."""
    rejected = _CONFIG_REJECTED.search(logs)
    if rejected:
        why = f": {rejected.group('why')}" if rejected.group("why") else ""
        return ConfigError(
            f"broker config {rejected.group('key')!r}: Kafka rejected value {rejected.group('value')!r}{why}"
        )
    tail = "\n".join(logs.splitlines()[-STARTUP_LOG_LINES:])
    known = f"\n{_BOOTSTRAP_EMPTIED_WHY}" if _BOOTSTRAP_EMPTIED in logs else ""
    return ClusterError(f"{node} exited during startup:\n{tail}{known}")


@dataclass
class ClusterSpec:
    """What to start: the shape of the cluster and where its Kafka comes from."""

    brokers: int = 3
    zookeepers: int = 1
    broker_config: Mapping[str, ConfigValue] = field(default_factory=dict)
    image: str | None = None  # a prebuilt kchaos/kafka image; else built from `kafka`
    kafka: str | None = None  # a release number (Maven Central), tarball or directory; None = the default
    base_image: str = LOCAL_BASE_IMAGE
    heap: str = "256m"
    metadata: str | None = None
    """`zookeeper` or `kraft`; None: ZooKeeper before Kafka 4.0 (the design's model), KRaft from 4.0."""
    controllers: int = 1
    """KRaft: the voters of the metadata quorum."""
    combined: bool = False
    """KRaft: the first `controllers` brokers are the controllers too (process.roles=broker,controller)."""
    zookeeper_only: str = ""
    """Why this cluster's scenario means ZooKeeper mode (empty: it runs on KRaft too)."""
    features: Mapping[str, int] = field(default_factory=dict)
    """KRaft: feature levels the log dirs are formatted with, e.g. {"eligible.leader.replicas.version": 0}
    (`kafka-storage format --feature`, 3.8 and later); the release's defaults for the rest."""
    disk: str = "plain"
    """`lossy`: every node's data directory on a lossy disk of its own, mounted on the host (what
    `power-loss` and the disk faults act on); `plain`: in the container."""

    def __post_init__(self) -> None:
        if self.disk not in DISKS:
            raise ConfigError(f"cluster.disk must be one of {', '.join(DISKS)}, got {self.disk!r}")
        if not 1 <= self.brokers <= 9:
            raise ConfigError(f"cluster.brokers must be between 1 and 9, got {self.brokers}")
        if self.zookeepers not in (1, 3, 5):
            raise ConfigError(f"cluster.zookeepers must be 1, 3 or 5, got {self.zookeepers}")
        if self.metadata not in (None, *METADATA_MODES):
            raise ConfigError(
                f"cluster.metadata must be one of {', '.join(METADATA_MODES)}, got {self.metadata!r}"
            )
        if self.controllers not in (1, 3, 5):
            raise ConfigError(f"cluster.controllers must be 1, 3 or 5, got {self.controllers}")
        for name, level in self.features.items():
            if (
                not _FEATURE_NAME.fullmatch(str(name))
                or isinstance(level, bool)
                or not isinstance(level, int)
                or level < 0
            ):
                raise ConfigError(
                    f"cluster.features: {name!r}: {level!r} is not a feature level "
                    "(a feature name such as eligible.leader.replicas.version, and a whole number >= 0)"
                )
        if self.combined and self.controllers > self.brokers:
            raise ConfigError(
                f"cluster.combined: {self.controllers} controllers cannot be among {self.brokers} brokers"
            )
        check_override_syntax(self.broker_config)

    def metadata_mode(self, version: KafkaVersion) -> str:
        """`metadata`, or the version's default; ConfigError for a mode the release does not have."""
        mode = self.metadata or ("zookeeper" if version.has_zookeeper else "kraft")
        if mode == "kraft" and self.zookeeper_only:
            raise ConfigError(
                f"this scenario runs on ZooKeeper only (Kafka {version} is KRaft here): {self.zookeeper_only}"
            )
        if mode == "kraft" and not version.has_kraft:
            raise ConfigError(
                f"cluster.metadata kraft needs Kafka 3.3 or later (KIP-833); this is Kafka {version}"
            )
        if mode == "zookeeper" and not version.has_zookeeper:
            raise ConfigError(
                f"Kafka {version} has no ZooKeeper mode (removed in 4.0, KIP-833): use cluster.metadata kraft"
            )
        if self.features and (mode != "kraft" or not version.at_least(3, 8)):
            raise ConfigError(
                f"cluster.features are KRaft feature levels set when the storage is formatted (Kafka 3.8 "
                f"and later); this cluster is Kafka {version} in {mode} mode"
            )
        return mode

    def resolve_image(self) -> KafkaImage:
        if self.image:
            return KafkaImage.inspect(self.image)
        return ensure_kafka_image(KafkaDistribution.locate(self.kafka), self.base_image)


class KafkaCluster:
    def __init__(
        self,
        spec: ClusterSpec | None = None,
        *,
        run_id: str | None = None,
        start_timeout_s: float = 120.0,
        on_failed_start: Callable[[KafkaCluster], None] | None = None,
    ) -> None:
        self.spec = spec or ClusterSpec()
        self.run_id = docker_env.check_run_id(run_id) if run_id is not None else new_run_id("cluster")
        self.start_timeout_s = start_timeout_s
        self.on_failed_start = on_failed_start
        """Called when `start` fails, before the containers are removed: to keep their logs."""
        self.image: KafkaImage | None = None
        self.zookeepers: list[ZooKeeperNode] = []
        self.controllers: list[KRaftController] = []
        """Dedicated KRaft controllers (none in ZooKeeper mode or when combined)."""
        self.brokers: list[KafkaBroker] = []
        self.voter_ids: tuple[int, ...] = ()
        """KRaft: the node ids of the metadata quorum's voters."""
        self._network: Network | None = None
        self._metadata: MetadataReader | None = None
        self._owns_containers = True

    @classmethod
    def attach(cls, run_id: str, *, connect: bool = True) -> KafkaCluster:
        """A handle on a running cluster started by an earlier command (`kchaos cluster up`).

        Leaving its `with` block closes only the metadata reader; `kchaos cluster down` removes it.
        With `connect=False` no ZooKeeper session is opened (`connect_metadata` opens it later):
        for acting on containers whose ZooKeeper may be unreachable.
        """
        runs = docker_env.labelled_runs(run_id)
        voters: tuple[int, ...] = ()
        containers = runs[0].containers if runs else []
        if not containers:
            raise ConfigError(f"no cluster with run id {run_id!r} is running (see `kchaos cluster list`)")
        cluster = cls(run_id=run_id)
        cluster._owns_containers = False
        cluster.image = KafkaImage.inspect(containers[0].attrs["Config"]["Image"])
        for container in sorted(containers, key=lambda c: c.labels.get("kchaos.node", "")):
            name, role = container.labels.get("kchaos.node", ""), container.labels.get("kchaos.role")
            ip = next(iter(container.attrs["NetworkSettings"]["Networks"].values()))["IPAMConfig"][
                "IPv4Address"
            ]
            number = int(name.rsplit("-", 1)[1])
            node: Node
            if role == "zookeeper":
                node = ZooKeeperNode(number, cluster.image.tag, run_id, NO_NETWORK, ip, "")
                cluster.zookeepers.append(node)
            elif role == "controller":
                controller = KRaftController(number, cluster.image.tag, run_id, NO_NETWORK, ip, ATTACHED)
                cluster.controllers.append(controller)
                node = controller
            else:
                broker = KafkaBroker(number, cluster.image.tag, run_id, NO_NETWORK, ip, ATTACHED)
                cluster.brokers.append(broker)
                node = broker
            voters = _voters_of(container) or voters
            node.attach(container)
            disk = lossy_mounts.node_mount(run_id, name)
            node.disk = disk if disk.mounted else None
        cluster.voter_ids = voters
        cluster.spec = ClusterSpec(
            brokers=len(cluster.brokers),
            zookeepers=len(cluster.zookeepers) or 1,
            image=cluster.image.tag,
            metadata="kraft" if voters else "zookeeper",
            controllers=len(voters) or 1,
            combined=bool(voters) and not cluster.controllers,
            disk="lossy" if any(node.disk for node in cluster.nodes) else "plain",
        )
        if connect:
            cluster.connect_metadata()
        return cluster

    def connect_metadata(self, timeout_s: float = 10.0) -> None:
        """Open the reader `state()` and the waits go through (once): a ZooKeeper session, or the
        KRaft reader, which asks the brokers and controllers themselves."""
        if self._metadata is not None:
            return
        if self.kraft:
            self._metadata = KRaftStateReader(
                [Endpoint(b.broker_id, b.ip, BROKER_PORT) for b in self.brokers],
                [Endpoint(node.node_id, node.ip, CONTROLLER_PORT) for node in self.voters],
                elr=self.kafka_version.at_least(3, 8),  # DescribeTopicPartitions (KIP-966)
            )
        else:
            self._metadata = ZkStateReader(self.zk_connect, timeout_s=timeout_s).__enter__()

    # -- lifecycle -------------------------------------------------------------------------------
    def __enter__(self) -> KafkaCluster:
        if self._owns_containers:  # an attached cluster is already running
            self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        self._close_after(exc)

    def start(self) -> None:
        image = self.image = self.spec.resolve_image()
        version = KafkaVersion.parse(image.kafka_version)
        kraft = self.spec.metadata_mode(version) == "kraft"
        validate_overrides(self.spec.broker_config, image.config_keys, image.kafka_version)
        try:
            self._network, subnet = create_network(self.run_id)
            hosts = subnet.network_address
            broker_ips = [str(hosts + 100 + i) for i in range(1, self.spec.brokers + 1)]
            if kraft:
                self._create_kraft_nodes(
                    version, image, broker_ips, [str(hosts + 50 + i) for i in range(1, 6)]
                )
            else:
                self._create_zookeeper_nodes(
                    version, image, broker_ips, [str(hosts + 10 + i) for i in range(1, 6)]
                )
            if not image.verbatim_config and any("\\" in node.config for node in self.nodes):
                raise ConfigError(
                    f"image {image.tag} predates configs written as they are: its entrypoint would "
                    "expand the backslashes of these broker settings; rebuild it with `kchaos images build`"
                )
            if self.spec.disk == "lossy":
                self._put_data_on_lossy_disks()
            for zk in self.zookeepers:
                zk.start()
            if self.zookeepers:
                self.wait_for_zookeepers(timeout_s=self.start_timeout_s)
            self.connect_metadata(timeout_s=self.start_timeout_s)
            for node in [*self.controllers, *self.brokers]:
                node.start()
            self.wait_for_brokers(timeout_s=self.start_timeout_s)
        except BaseException as exc:
            if self.on_failed_start is not None:
                try:
                    self.on_failed_start(self)
                except Exception as hook_error:  # the start's own error is the one to raise
                    exc.add_note(f"on_failed_start failed too: {hook_error!r}")
            self._close_after(exc)
            raise

    def _create_zookeeper_nodes(
        self, version: KafkaVersion, image: KafkaImage, broker_ips: list[str], spare_ips: list[str]
    ) -> None:
        zk_ips = spare_ips[: self.spec.zookeepers]
        zk_config = render_zookeeper_config(zk_ips)
        self.zookeepers = [
            ZooKeeperNode(i, image.tag, self.run_id, self._network_or_fail, ip, zk_config)
            for i, ip in enumerate(zk_ips, start=1)
        ]
        self.brokers = [
            KafkaBroker(
                i,
                image.tag,
                self.run_id,
                self._network_or_fail,
                ip,
                KafkaLaunch(
                    render_broker_config(version, i, ip, zk_ips, self.spec.brokers, self.spec.broker_config),
                    self.spec.heap,
                ),
            )
            for i, ip in enumerate(broker_ips, start=1)
        ]

    def _create_kraft_nodes(
        self, version: KafkaVersion, image: KafkaImage, broker_ips: list[str], spare_ips: list[str]
    ) -> None:
        count, spec = self.spec.controllers, self.spec
        if spec.combined:
            voters = tuple((i, broker_ips[i - 1]) for i in range(1, count + 1))
        else:
            voters = tuple((CONTROLLER_ID_BASE + i, spare_ips[i - 1]) for i in range(1, count + 1))
        self.voter_ids = tuple(node_id for node_id, _ in voters)
        cluster_id = _kraft_cluster_id()
        features = " ".join(f"{name}={level}" for name, level in spec.features.items())

        def launch(node_id: int, ip: str, roles: tuple[str, ...]) -> KafkaLaunch:
            kraft = KRaftRole(roles, voters)
            config = render_broker_config(version, node_id, ip, [], spec.brokers, spec.broker_config, kraft)
            return KafkaLaunch(config, spec.heap, cluster_id, features)  # every node formats alike

        network = self._network_or_fail
        if not spec.combined:
            self.controllers = [
                KRaftController(i, image.tag, self.run_id, network, ip, launch(node_id, ip, ("controller",)))
                for i, (node_id, ip) in enumerate(voters, start=1)
            ]
        self.brokers = [
            KafkaBroker(
                i,
                image.tag,
                self.run_id,
                network,
                ip,
                launch(i, ip, ("broker", "controller") if i in self.voter_ids else ("broker",)),
            )
            for i, ip in enumerate(broker_ips, start=1)
        ]

    def _put_data_on_lossy_disks(self) -> None:
        """Mount a lossy disk for every node, each holding that node's data directory."""
        for node in self.nodes:
            disk = lossy_mounts.node_mount(self.run_id, node.name)
            disk.start()
            node.put_data_on(disk, ZOOKEEPER_DATA_DIR if isinstance(node, ZooKeeperNode) else DATA_DIR)

    @property
    def _network_or_fail(self) -> Network:
        if self._network is None:
            raise ClusterError("the cluster's network has not been created")
        return self._network

    def close(self) -> None:
        """Remove every container and the network of this run. Safe to call more than once.

        Every step is tried: one ClusterError names each that failed, one line each, joined by '; '."""
        failures = Failures()
        if self._metadata is not None:
            reader, self._metadata = self._metadata, None
            with failures.attempt("cannot close the metadata reader"):
                reader.close()
        if self._owns_containers:
            # By label: the nodes, and anything a crashed start left behind (the probe network).
            with failures.attempt(f"cannot remove run {self.run_id}"):
                docker_env.remove_labelled(self.run_id)
            with failures.attempt(f"cannot remove the lossy disks of run {self.run_id}"):
                lossy_mounts.remove_run(self.run_id)  # once no container holds them
            self._network = None
        failures.raise_if_any()

    def _close_after(self, exc: BaseException | None) -> None:
        """Close; when `exc` is on its way out, a failing close is noted on it instead of hiding it."""
        if exc is None:
            self.close()
            return
        try:
            self.close()
        except ClusterError as close_error:
            exc.add_note(f"removing the cluster afterwards failed too: {close_error}")

    @property
    def recorded_broker_config(self) -> dict[str, str]:
        """The overrides as every broker's server.properties holds them (for run.json)."""
        return format_settings(self.spec.broker_config)

    # -- nodes -----------------------------------------------------------------------------------
    @property
    def nodes(self) -> list[Node]:
        return [*self.zookeepers, *self.controllers, *self.brokers]

    @property
    def kraft(self) -> bool:
        """Whether a KRaft quorum, not ZooKeeper, holds the metadata (it has voters)."""
        return bool(self.voter_ids)

    @property
    def metadata_nodes(self) -> list[Node]:
        """The nodes that hold the metadata apart from the brokers: ZooKeeper, or dedicated controllers."""
        return [*self.zookeepers, *self.controllers]

    @property
    def voters(self) -> list[KafkaBroker | KRaftController]:
        """KRaft: the metadata quorum's voters (dedicated controllers, or the combined brokers)."""
        every: list[KafkaBroker | KRaftController] = [*self.controllers, *self.brokers]
        return [n for n in every if n.node_id in self.voter_ids]

    def node(self, name: str) -> Node:
        for node in self.nodes:
            if node.name == name:
                return node
        raise ConfigError(f"no node named {name!r}; this cluster has {', '.join(n.name for n in self.nodes)}")

    def broker(self, broker_id: int) -> KafkaBroker:
        for broker in self.brokers:
            if broker.broker_id == broker_id:
                return broker
        raise ConfigError(f"no broker with id {broker_id}; ids are {[b.broker_id for b in self.brokers]}")

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{b.ip}:{BROKER_PORT}" for b in self.brokers)

    @property
    def zk_connect(self) -> str:
        return ",".join(f"{z.ip}:{ZK_CLIENT_PORT}" for z in self.zookeepers)

    def java_version(self) -> str:
        """The Java runtime the brokers run on, as `java -version` prints its first line in one."""
        broker = next((b for b in self.brokers if b.status() == "running"), None)
        if broker is None:
            raise ClusterError("cannot tell the brokers' Java: no broker is running")
        code, output = broker.exec(["java", "-version"], timeout_s=30)
        first = output.strip().splitlines()[0] if output.strip() else ""
        if code != 0 or not first:
            raise ClusterError(
                f"`java -version` in {broker.name} failed (exit {code}): {output.strip()[-300:]}"
            )
        return first

    @property
    def kafka_version(self) -> KafkaVersion:
        if self.image is None:
            raise ClusterError("the cluster has not been started")
        return KafkaVersion.parse(self.image.kafka_version)

    # -- state -----------------------------------------------------------------------------------
    @property
    def metadata(self) -> MetadataReader:
        """What ZooKeeper or the KRaft quorum says of the cluster."""
        if self._metadata is None:
            raise ClusterError("the cluster has not been started")
        return self._metadata

    def state(self, topics: list[str] | None = None) -> ClusterSnapshot:
        return self.metadata.snapshot(topics)

    def describe_nodes(self, tail: int = 15) -> str:
        """Status and last log lines of every node, for error messages."""
        return "\n".join(
            f"--- {node.name} ({node.status()}) last {tail} log lines:\n{node.logs(tail).rstrip()}"
            for node in self.nodes
        )

    def _fail_on_exited_brokers(self, broker_ids: list[int]) -> None:
        _fail_if_exited([*self.controllers, *(b for b in self.brokers if b.broker_id in broker_ids)])

    def wait_for_zookeepers(
        self, timeout_s: float = 60.0, zookeepers: list[ZooKeeperNode] | None = None
    ) -> None:
        """Wait until the given ZooKeeper nodes (default: all) serve requests; a node that exits ends
        the wait at once.

        Accepting connections is not enough: ZooKeeper 3.8 (Kafka 3.x) accepts them before it serves,
        and left a session request sent then unanswered until the client gave up (4 of 40 starts).
        """
        self._wait_for_nodes(
            self.zookeepers if zookeepers is None else zookeepers,
            lambda zk: zookeeper_serving(zk.ip),
            what="ZooKeeper to serve requests",
            timeout_s=timeout_s,
        )

    def wait_for_controllers(self, controllers: list[KRaftController], timeout_s: float = 60.0) -> None:
        """Wait until the given dedicated KRaft controllers answer DescribeQuorum on their controller
        port (the leader describes the quorum, the others say they do not lead): up, if not yet
        caught up; one that exits ends the wait at once."""

        def unanswered(controller: KRaftController) -> str | None:
            endpoint = Endpoint(controller.node_id, controller.ip, CONTROLLER_PORT)
            seen = quorum_answer(endpoint, QUORUM_RETRY_TIMEOUT_S)
            return seen if isinstance(seen, str) else None

        self._wait_for_nodes(
            controllers,
            unanswered,
            what=f"controllers {[c.name for c in controllers]} to answer on their controller port",
            timeout_s=timeout_s,
        )

    def _wait_for_nodes(
        self, nodes: Sequence[N], not_ready: Callable[[N], str | None], *, what: str, timeout_s: float
    ) -> None:
        """Wait until `not_ready` says nothing (None) of every node; a node that exits ends the wait
        at once, with what its log says."""

        def probe() -> tuple[bool, str]:
            waiting = []
            _fail_if_exited(nodes)
            for node in nodes:
                if (why := not_ready(node)) is not None:
                    waiting.append(f"{node.name}: {why}")
            return not waiting, "; ".join(waiting) or "all ready"

        wait_until(probe, what=what, timeout_s=timeout_s, diagnostics=self.describe_nodes)

    def wait_for_brokers(self, timeout_s: float = 60.0, broker_ids: list[int] | None = None) -> None:
        """Wait until the given brokers (default: all) are registered (ZooKeeper) or unfenced (KRaft)."""
        expected = sorted(broker_ids or [b.broker_id for b in self.brokers])

        def probe() -> tuple[bool, str]:
            self._fail_on_exited_brokers(expected)
            try:
                live = self.metadata.live_brokers()
            except Exception as exc:
                return False, f"metadata not readable: {exc!r}"
            return set(expected) <= set(live), f"registered brokers {list(live)}, expected {expected}"

        wait_until(
            probe,
            what=f"brokers {expected} to register in {'the KRaft quorum' if self.kraft else 'ZooKeeper'}",
            timeout_s=timeout_s,
            diagnostics=self.describe_nodes,
        )

    def wait_for_isr(self, topics: list[str], timeout_s: float = 60.0) -> ClusterSnapshot:
        """Wait until every partition of `topics` has a leader and a full ISR."""

        def probe() -> tuple[bool, str]:
            try:
                snapshot = self.state(topics)
            except ClusterError as exc:
                return False, str(exc)
            ready = bool(snapshot.partitions) and all(p.isr_full for p in snapshot.partitions)
            return ready, snapshot.describe()

        wait_until(
            probe,
            what=f"full ISR on every partition of {topics}",
            timeout_s=timeout_s,
            diagnostics=self.describe_nodes,
        )
        return self.state(topics)

    # -- topics ----------------------------------------------------------------------------------
    def create_topic(
        self,
        name: str,
        partitions: int = 3,
        replication_factor: int = 3,
        config: Mapping[str, ConfigValue] | None = None,
        timeout_s: float = 60.0,
    ) -> None:
        """Create a topic with Kafka's own TopicCommand, then wait for leaders and full ISR."""
        if replication_factor > len(self.brokers):
            raise ConfigError(
                f"topic {name!r}: replication factor {replication_factor} exceeds "
                f"the {len(self.brokers)} brokers of the cluster"
            )
        broker = next((b for b in self.brokers if b.status() == "running"), None)
        if broker is None:
            raise ClusterError(f"cannot create topic {name!r}: no broker is running")
        where = (
            ["--bootstrap-server", f"{broker.ip}:{BROKER_PORT}"]
            if self.kafka_version.at_least(2, 2)
            else ["--zookeeper", self.zk_connect]
        )
        command = [
            "java",
            "-Xmx128m",
            "-cp",
            "/opt/kafka/libs/*",
            self.kafka_version.topic_command,
            *where,
            "--create",
            "--topic",
            name,
            "--partitions",
            str(partitions),
            "--replication-factor",
            str(replication_factor),
        ]
        for key, value in (config or {}).items():
            command += ["--config", f"{key}={format_value(value)}"]
        code, output = broker.exec(command, timeout_s=int(timeout_s))
        if code == TIMED_OUT:  # no controller to answer: the cluster's state, not the request, is at fault
            raise ClusterError(f"creating topic {name!r} did not finish within {timeout_s:.0f} s")
        if code != 0 or "Error while executing" in output or "Exception" in output:
            detail = "\n".join(line for line in output.splitlines() if "log4j" not in line)[-1500:]
            raise ConfigError(f"creating topic {name!r} failed (exit {code}):\n{detail}")
        self.wait_for_isr([name], timeout_s=timeout_s)

    def leader_of(self, topic: str, partition: int) -> KafkaBroker:
        state = self.state([topic]).partition(topic, partition)
        if state is None or state.leader < 0:
            raise ClusterError(f"{topic}/{partition} has no leader now")
        return self.broker(state.leader)


def _kraft_cluster_id() -> str:
    """A new KRaft cluster id: 16 random bytes in URL-safe base64 without padding, as Kafka's own, and
    like Kafka's never starting with '-', which kafka-storage's `-t` would read as an option."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


def _fail_if_exited(nodes: Sequence[Node]) -> None:
    """The startup failure of the first of `nodes` that exited, with what its log says."""
    exited = next((node for node in nodes if node.status() in ("exited", "dead")), None)
    if exited is not None:
        raise startup_failure(exited.name, exited.logs(200))


def _voters_of(container: Any) -> tuple[int, ...]:
    """The node ids in a KRaft node's controller.quorum.voters (empty for ZooKeeper-mode nodes)."""
    env = dict(item.split("=", 1) for item in container.attrs["Config"].get("Env") or [] if "=" in item)
    found = re.search(r"^controller\.quorum\.voters=(.*)$", env.get("KCHAOS_CONFIG", ""), re.MULTILINE)
    return tuple(int(v.split("@")[0]) for v in found.group(1).split(",")) if found else ()
