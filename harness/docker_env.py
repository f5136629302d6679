"""Access to the Docker engine, the run label, removal of what a run left behind, commands run in
containers (`exec_run`), and throwaway containers for probing the host (`ScratchContainer`).

Ryuk (testcontainers' reaper) is an image that cannot be pulled on registry-less machines, so it
is disabled and kafka-chaos owns cleanup: every container and network it creates carries the
label ``kchaos.run=<run id>``, and `remove_labelled` removes them by that label.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache
from types import TracebackType
from typing import Any

# Must be set before testcontainers reads its configuration.
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")

import docker
from docker.errors import APIError, DockerException, ImageNotFound, NotFound

from harness.errors import EnvironmentError_

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


@dataclass(frozen=True)
class Removed:
    containers: list[str]
    networks: list[str]


def remove_labelled(run_id: str | None = None) -> Removed:
    """Remove containers, then networks, labelled with `run_id` (or with any kchaos run)."""
    docker_client = client()
    selector = f"{RUN_LABEL}={run_id}" if run_id else RUN_LABEL
    containers: list[str] = []
    for container in docker_client.containers.list(all=True, filters={"label": selector}):
        try:
            if container.status == "paused":
                container.unpause()
            container.remove(force=True, v=True)
            containers.append(container.name)
        except NotFound:
            pass  # removed concurrently: the goal is reached
    networks: list[str] = []
    for network in docker_client.networks.list(filters={"label": selector}):
        try:
            network.remove()
            networks.append(network.name)
        except NotFound:
            pass
    return Removed(containers, networks)


def exec_run(container: Any, command: list[str], timeout_s: int | None = None) -> tuple[int, str]:
    """Run `command` in a running container, killed after `timeout_s`; (exit code, combined output).

    Docker's own errors (APIError, NotFound) are the caller's to translate: it knows what it was doing.
    """
    if timeout_s is not None:
        command = ["timeout", str(timeout_s), *command]
    result = container.exec_run(command, demux=False)
    return int(result.exit_code), (result.output or b"").decode(errors="replace")


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
