"""Access to the Docker engine, the run label, and removal of what a run left behind.

Ryuk (testcontainers' reaper) is an image that cannot be pulled on registry-less machines, so it
is disabled and kafka-chaos owns cleanup: every container and network it creates carries the
label ``kchaos.run=<run id>``, and `remove_labelled` removes them by that label.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache
from typing import Any

# Must be set before testcontainers reads its configuration.
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")

import docker
from docker.errors import DockerException, NotFound

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
