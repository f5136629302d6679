"""One service object per container (a Kafka broker, a KRaft controller or a ZooKeeper node), with the
verbs faults use.

Modelled on kafkatest's services: `start / stop / kill / pause / resume / exec / logs / ip`.
`start` creates the container the first time (through testcontainers) and restarts it after a
kill or stop, keeping its filesystem, so a restarted broker comes back with its log directory.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from docker.errors import APIError, NotFound
from docker.types import EndpointConfig
from requests.exceptions import RequestException
from testcontainers.core.container import DockerContainer
from testcontainers.core.network import Network

from contract.errors import ClusterError
from contract.nodes import CONTROLLER_ID_BASE, broker_name, controller_name, zookeeper_name
from harness import docker_env
from harness.lossy.mounts import LossyMount
from harness.retrying import docker_call


class Node:
    """A container on the cluster network with a fixed IP, labelled with its run id."""

    role = "node"

    def __init__(
        self, name: str, image: str, run_id: str, network: Network, ip: str, env: dict[str, str]
    ) -> None:
        self.name = name
        self.ip = ip
        self.run_id = run_id
        self.config = env.get("KCHAOS_CONFIG", "")
        """The properties file the node starts with (empty for a node attached to, not started)."""
        self._spec = DockerContainer(
            image,
            command=self.role,
            env=env,
            name=f"{run_id}-{name}",
            labels={**docker_env.run_labels(run_id), "kchaos.node": name, "kchaos.role": self.role},
            network=network,
            # Overrides testcontainers' own endpoint config, to pin the address: faults cut links by IP,
            # and a restarted broker must come back at the address its peers and clients know.
            networking_config={
                network.name: EndpointConfig(
                    docker_env.client().api.api_version, ipv4_address=ip, aliases=[name]
                )
            },
            hostname=name,
            cap_add=["NET_ADMIN"],  # iptables and tc inside the container, for network faults
        )
        self._container: Any = None
        self.disk: LossyMount | None = None
        """The lossy disk its data directory lives on (`put_data_on`), or None: the container's own."""

    def put_data_on(self, disk: LossyMount, data_dir: str) -> None:
        """Bind-mount `disk` (mounted on the host, so it outlives a `docker kill`) at `data_dir`;
        before the container is created."""
        self._spec.with_volume_mapping(disk.mount, data_dir, "rw")
        self.disk = disk

    @property
    def container_name(self) -> str:
        return f"{self.run_id}-{self.name}"

    def _wrapped(self) -> Any:
        if self._container is None:
            raise ClusterError(f"{self.name} has not been started")
        return self._container

    def start(self) -> None:
        """Create and start the container, or start it again after `kill` / `stop`."""
        try:
            if self._container is None:
                self._spec.start()
                self._container = self._spec.get_wrapped_container()
            else:
                docker_call(self._container.start)  # starting a running container changes nothing
        except (APIError, NotFound) as exc:
            raise ClusterError(f"cannot start {self.name}: {exc.explanation or exc}") from None

    def stop(self, timeout_s: int = 30) -> None:
        """Clean shutdown: SIGTERM, then SIGKILL after `timeout_s`."""
        self._call("stop", timeout=timeout_s)

    def kill(self) -> None:
        """Crash: SIGKILL every process of the container."""
        self._call("kill", signal="SIGKILL")

    def pause(self) -> None:
        """Freeze every process (cgroup freezer), like a very long GC pause.

        Tried again on an engine error: the cgroup v1 freezer now and then gives up on a busy broker
        ("unable to freeze", seen once in CI), and runc thaws the container before it says so."""
        self._call("pause", retried=True)

    def resume(self) -> None:
        self._call("unpause", retried=True)

    def _call(self, verb: str, *, retried: bool = False, **kwargs: Any) -> None:
        def call() -> None:
            getattr(self._wrapped(), verb)(**kwargs)

        try:
            if retried:
                docker_call(call)
            else:
                call()
        except (APIError, NotFound) as exc:
            raise ClusterError(f"cannot {verb} {self.name}: {exc.explanation or exc}") from None

    def status(self) -> str:
        """Docker's view: running, paused, exited, created, or missing."""
        try:
            container = self._wrapped()
            docker_call(container.reload)
            return str(container.status)
        except (ClusterError, NotFound):
            return "missing"
        except APIError as exc:
            raise ClusterError(f"cannot inspect {self.name}: {exc.explanation or exc}") from None

    def exit_code(self) -> int | None:
        """The exit code of the container's last run, as of the last `status()` (None if unknown)."""
        if self._container is None:
            return None
        code = self._container.attrs.get("State", {}).get("ExitCode")
        return int(code) if code is not None else None

    def exec(self, command: list[str], timeout_s: int | None = None) -> tuple[int, str]:
        """Run a command inside the container; return (exit code, combined output)."""
        try:
            return docker_env.exec_run(self._wrapped(), command, timeout_s)
        except (APIError, NotFound) as exc:
            raise ClusterError(f"cannot exec in {self.name}: {exc.explanation or exc}") from None

    def archive(self, path: str) -> Iterator[bytes]:
        """The files under `path` in the container as a tar stream, whether it runs or not (a killed
        broker's log directory is still there to read)."""
        try:
            chunks, _ = docker_call(lambda: self._wrapped().get_archive(path, chunk_size=1 << 20))
        except (APIError, NotFound) as exc:
            raise ClusterError(f"cannot read {path} in {self.name}: {exc.explanation or exc}") from None
        try:
            yield from chunks
        except (APIError, RequestException) as exc:
            raise ClusterError(f"reading {path} in {self.name} broke off: {exc}") from None
        finally:
            # A reader that stops early must not leave the engine writing the rest: until it has,
            # Docker holds the container, and every later call on it (exec, kill, remove) waits.
            with contextlib.suppress(APIError, RequestException):
                for _ in chunks:
                    pass

    def logs(self, tail: int | Literal["all"] = 40) -> str:
        try:
            return str(self._wrapped().logs(tail=tail).decode(errors="replace"))
        except (ClusterError, APIError, NotFound):
            return "(no logs: container missing)"

    def attach(self, container: Any) -> None:
        """Adopt an existing container (a cluster started by an earlier command)."""
        self._container = container

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} {self.ip}>"


class ZooKeeperNode(Node):
    role = "zookeeper"

    def __init__(self, number: int, image: str, run_id: str, network: Network, ip: str, config: str) -> None:
        super().__init__(
            zookeeper_name(number),
            image,
            run_id,
            network,
            ip,
            {"KCHAOS_CONFIG": config, "KCHAOS_ZK_MYID": str(number), "KCHAOS_HEAP": "128m"},
        )
        self.number = number


@dataclass(frozen=True)
class KafkaLaunch:
    """How a Kafka process starts: its properties file and heap, and in KRaft the cluster id and
    feature levels ("name=level" separated by spaces) its entrypoint formats the log directory with."""

    config: str
    heap: str
    kraft_cluster_id: str | None = None
    features: str = ""

    def env(self) -> dict[str, str]:
        env = {"KCHAOS_CONFIG": self.config, "KCHAOS_HEAP": self.heap}
        if self.kraft_cluster_id:
            env["KCHAOS_KRAFT_CLUSTER_ID"] = self.kraft_cluster_id
        if self.features:
            env["KCHAOS_KRAFT_FEATURES"] = self.features
        return env


class KafkaProcess(Node):
    """A Kafka JVM (kafka.Kafka) with its node id: a broker, a dedicated KRaft controller, or both."""

    def __init__(
        self, name: str, node_id: int, image: str, run_id: str, network: Network, ip: str, launch: KafkaLaunch
    ) -> None:
        super().__init__(name, image, run_id, network, ip, launch.env())
        self.node_id = node_id


class KafkaBroker(KafkaProcess):
    role = "kafka"

    def __init__(
        self, broker_id: int, image: str, run_id: str, network: Network, ip: str, launch: KafkaLaunch
    ) -> None:
        super().__init__(broker_name(broker_id), broker_id, image, run_id, network, ip, launch)
        self.broker_id = broker_id


class KRaftController(KafkaProcess):
    """A dedicated KRaft controller: a voter of the metadata quorum that leads no partition."""

    role = "controller"

    def __init__(
        self, number: int, image: str, run_id: str, network: Network, ip: str, launch: KafkaLaunch
    ) -> None:
        super().__init__(
            controller_name(number), CONTROLLER_ID_BASE + number, image, run_id, network, ip, launch
        )
        self.number = number
