"""Access to the Docker engine, the run label, removal of what a run left behind, commands run in
containers (`exec_run`), and throwaway containers for probing the host (`ScratchContainer`).

Ryuk (testcontainers' reaper) is an image that cannot be pulled on registry-less machines, so it
is disabled and kafka-chaos owns cleanup: every container and network it creates carries the
label ``kchaos.run=<run id>``, and `remove_labelled` removes them by that label.
"""

from __future__ import annotations

import io
import os
import re
import tarfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from types import TracebackType
from typing import Any

# Must be set before testcontainers reads its configuration.
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")

import docker
from docker.errors import APIError, DockerException, ImageNotFound, NotFound

from contract.errors import ClusterError, ConfigError, EnvironmentError_, Failures
from harness.lossy import mounts as lossy_mounts
from harness.retrying import docker_call

RUN_LABEL = "kchaos.run"


@cache
def client() -> Any:
    """A Docker client for the local engine, or a clear error saying how to get one."""
    try:
        docker_client = docker.from_env(timeout=120)
        docker_client.ping()
    except DockerException as exc:
        raise EnvironmentError_(
            f"no Docker engine answers ({exc}). Run `make setup` (installs and starts one), "
            "or start dockerd yourself."
        ) from None
    return docker_client


def run_labels(run_id: str) -> dict[str, str]:
    return {RUN_LABEL: run_id}


# What `contract.history.new_run_id` makes (20260101-120000-cluster-1a2b), and any other word Docker
# accepts in a container name (`compose`, scratch ids): never empty, no spaces, no wildcards.
RUN_ID_SHAPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")

# A run with a container in one of these states is a live cluster (or a command still using it).
LIVE_STATES = frozenset({"running", "paused", "restarting"})


def check_run_id(run_id: str) -> str:
    """`run_id` if it can be one, else ConfigError: an empty or wildcard id must never select runs."""
    if not RUN_ID_SHAPE.fullmatch(run_id):
        raise ConfigError(
            f"{run_id!r} is not a run id: expected letters, digits, '.', '_' and '-', "
            "like 20260101-120000-cluster-1a2b (see `kchaos cluster list`)"
        )
    return run_id


@dataclass
class Run:
    """The containers and networks Docker holds with one run's label."""

    run_id: str
    containers: list[Any] = field(default_factory=list)
    networks: list[Any] = field(default_factory=list)

    @property
    def live(self) -> bool:
        return any(c.status in LIVE_STATES for c in self.containers)

    def describe(self) -> str:
        """e.g. `3 containers (running 2, exited 1), 1 network`."""
        states = Counter(str(c.status) for c in self.containers)
        by_state = ", ".join(f"{state} {n}" for state, n in sorted(states.items()))
        containers = f"{len(self.containers)} container{'s' * (len(self.containers) != 1)}"
        networks = f"{len(self.networks)} network{'s' * (len(self.networks) != 1)}"
        return f"{containers} ({by_state}), {networks}" if by_state else f"{containers}, {networks}"


def labelled_runs(run_id: str | None = None) -> list[Run]:
    """Every run Docker holds something of (or only `run_id`), sorted by run id."""
    selector = f"{RUN_LABEL}={check_run_id(run_id)}" if run_id is not None else RUN_LABEL
    filters = {"label": selector}
    docker_client = client()
    runs: dict[str, Run] = {}
    for container in docker_call(lambda: docker_client.containers.list(all=True, filters=filters)):
        label = container.labels[RUN_LABEL]
        runs.setdefault(label, Run(label)).containers.append(container)
    for network in docker_call(lambda: docker_client.networks.list(filters=filters)):
        label = network.attrs.get("Labels", {}).get(RUN_LABEL, "")
        runs.setdefault(label, Run(label)).networks.append(network)
    return [runs[r] for r in sorted(runs)]


@dataclass(frozen=True)
class Removed:
    containers: list[str]
    networks: list[str]
    failures: list[str]
    """One line per object that could not be removed (after retries); the rest were still tried."""


def remove_run(run: Run) -> Removed:
    """Remove the containers, then the networks, of `run`, going on past any that fails."""
    containers: list[str] = []
    networks: list[str] = []
    failures = Failures()
    for container in run.containers:
        with failures.attempt(f"cannot remove container {container.name}"):
            if _removed(_remove_container, container):
                containers.append(container.name)
    with failures.attempt(f"cannot remove the lossy disks of {run.run_id}"):
        lossy_mounts.remove_run(run.run_id)  # its nodes' data, once no container holds it
    for network in run.networks:
        with failures.attempt(f"cannot remove network {network.name}"):
            if _removed(docker_call, network.remove):
                networks.append(network.name)
    return Removed(containers, networks, failures.lines)


def _remove_container(container: Any) -> None:
    if container.status == "paused":  # an engine may refuse to remove a frozen container
        docker_call(container.unpause)
    docker_call(lambda: container.remove(force=True, v=True))


def _removed(remove: Callable[[Any], object], target: Any) -> bool:
    """`remove(target)`; False when it was gone already (removed concurrently: the goal is reached)."""
    try:
        remove(target)
    except NotFound:
        return False
    return True


def remove_labelled(run_id: str) -> Removed:
    """Remove every container, then network, labelled with `run_id`; ClusterError naming each one
    that could not be removed, after trying them all."""
    removed: list[Removed] = [remove_run(run) for run in labelled_runs(run_id)]
    failures = [line for r in removed for line in r.failures]
    if failures:
        raise ClusterError("; ".join(failures))
    return Removed(
        [name for r in removed for name in r.containers], [name for r in removed for name in r.networks], []
    )


_EXEC_END = "<kchaos-exec-end>"
_EXEC_SCRIPT = (
    # Leftovers of execs long over (each exec's file is kept for it to be read, below).
    "find /tmp -maxdepth 1 -name 'kchaos-exec-*' -mmin +10 -delete 2>/dev/null; "
    'out=$1; shift; if : >"$out" 2>/dev/null; then "$@" >"$out" 2>&1; code=$?; cat "$out"; '
    # No file to be had: the command still runs, its output only as the exec's.
    'else "$@" 2>&1; code=$?; fi; printf %s "' + _EXEC_END + '"; exit $code'
)


def exec_run(container: Any, command: list[str], timeout_s: int | None = None) -> tuple[int, str]:
    """Run `command` in a running container, killed after `timeout_s`; (exit code, combined output).

    The Docker engine now and then hands over none of an exec's output though the command wrote
    some, with the right exit code (docker-py #2042, moby #27289; here 2 of 100 execs of `echo
    hello` on a loaded machine): a heal that read `tc qdisc show` as empty left a qdisc in place. So
    the command's output also goes to a file in the container, followed on the exec's own output by
    an end mark; when the mark is missing, the file is read through the archive API instead.

    Docker's own errors (APIError, NotFound) are the caller's to translate: it knows what it was doing.
    """
    if timeout_s is not None:
        command = ["timeout", str(timeout_s), *command]
    kept = f"/tmp/kchaos-exec-{os.urandom(8).hex()}"
    result = container.exec_run(["sh", "-c", _EXEC_SCRIPT, "sh", kept, *command], demux=False)
    said = (result.output or b"").decode(errors="replace")
    if said.endswith(_EXEC_END):
        return int(result.exit_code), said.removesuffix(_EXEC_END)
    chunks, _ = container.get_archive(kept)
    with tarfile.open(fileobj=io.BytesIO(b"".join(chunks))) as archive:
        member = archive.extractfile(archive.getmembers()[0])
        output = member.read() if member is not None else b""
    return int(result.exit_code), output.decode(errors="replace")


class ScratchContainer:
    """A throwaway container of an image, for asking what containers may do on this host.

    It has no network at all (only loopback: nothing to reach, nothing to create), runs a `sleep`
    that ends by itself, may change its own network settings (NET_ADMIN, as cluster nodes do), is
    labelled with a run id of its own, and is removed on exit, also when starting it failed.
    """

    def __init__(self, image: str, purpose: str, lifetime_s: int = 120) -> None:
        self.image = image
        self.purpose = purpose
        self.lifetime_s = lifetime_s
        self.run_id = f"{purpose}-{os.urandom(3).hex()}"
        self._container: Any = None

    def __enter__(self) -> ScratchContainer:
        try:
            # Only a local image: `containers.run` would otherwise try to pull it from a registry.
            client().images.get(self.image)
        except ImageNotFound:
            raise EnvironmentError_(f"no local image {self.image} (`make images` builds ours)") from None
        try:
            self._container = client().containers.run(
                self.image,
                entrypoint=["sleep", str(self.lifetime_s)],
                name=f"kchaos-{self.run_id}",
                labels=run_labels(self.run_id),
                network_mode="none",
                cap_add=["NET_ADMIN"],
                detach=True,
            )
        except BaseException as exc:  # Ctrl-C included: it may come after Docker created it
            remove_labelled(self.run_id)
            if isinstance(exc, DockerException):
                what = f"a {self.purpose} container of {self.image}"
                raise EnvironmentError_(f"cannot start {what}: {exc}") from None
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        remove_labelled(self.run_id)

    def exec(self, command: list[str], timeout_s: int | None = None) -> tuple[int, str]:
        try:
            return exec_run(self._container, command, timeout_s)
        except (APIError, NotFound) as exc:
            what = f"{command[0]} in the {self.purpose} container"
            raise EnvironmentError_(f"cannot run {what}: {exc}") from None
