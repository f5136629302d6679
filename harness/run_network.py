"""A run's Docker network: labelled with the run id, on a subnet of its own so that Docker pins
each container's address (clients reach brokers at those addresses, and faults cut them)."""

from __future__ import annotations

import ipaddress

from docker.errors import APIError
from docker.types import IPAMConfig, IPAMPool
from testcontainers.core.network import Network

from contract.errors import ClusterError
from harness import docker_env
from harness.retrying import bounded


class NoNetwork(Network):
    """Stands in for the network of an attached cluster, whose containers already exist."""

    def __init__(self) -> None:
        self.name = "attached"


NO_NETWORK = NoNetwork()


def create_network(run_id: str) -> tuple[Network, ipaddress.IPv4Network]:
    """A labelled network with an explicit subnet (Docker pins container IPs only on those).

    Docker picks a free subnet for a probe network; the real one is then created on it, again (up
    to 3 times) when another network took that subnet in between.
    """
    taken = bounded(_subnet_taken, attempts=3, within_s=60.0, wait_s=0.0)
    try:
        return taken(_create_network_once, run_id)
    except APIError as exc:
        raise ClusterError(f"cannot create the cluster network: {exc.explanation or exc}") from None


def _subnet_taken(exc: BaseException) -> bool:
    return isinstance(exc, APIError) and "overlap" in str(exc).lower()


def _create_network_once(run_id: str) -> tuple[Network, ipaddress.IPv4Network]:
    client = docker_env.client()
    probe = client.networks.create(f"{run_id}-probe", labels=docker_env.run_labels(run_id))
    try:
        probe.reload()
        config = probe.attrs["IPAM"]["Config"][0]
    finally:
        probe.remove()
    subnet = ipaddress.ip_network(config["Subnet"])
    network = Network(
        docker_network_kw={
            "labels": docker_env.run_labels(run_id),
            "ipam": IPAMConfig(pool_configs=[IPAMPool(subnet=str(subnet), gateway=config.get("Gateway"))]),
        }
    )
    network.name = f"{run_id}-net"
    network.create()
    assert isinstance(subnet, ipaddress.IPv4Network)
    return network, subnet
