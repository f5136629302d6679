"""Link faults: `slow` (bandwidth limit, plus delay with jitter where the kernel has netem) and
`lossy` (random packet drop), applied inside the target containers on their cluster interface.

What a kernel offers differs: many have no `sch_netem` (and cannot load it), while `tbf` and the
iptables `statistic` match are nearly universal. `kernel_capabilities` probes a running container
for each, so faults use what exists and `detail`/reports say what was actually applied.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Protocol

from contract.errors import ClusterError, Failures, FaultError
from faults.base import FaultContext, coerce_float, register, retry_heal_step
from faults.iptables import FaultChain
from faults.targets import Targeted
from harness.cluster import KafkaCluster
from harness.docker_env import ScratchContainer
from harness.services import Node

DEVICE = "eth0"  # the container's interface on the cluster network (Docker names it so)


@dataclass(frozen=True)
class KernelCapabilities:
    netem: bool
    tbf: bool
    statistic: bool
    notes: tuple[str, ...]
    """Why a capability is missing, in the kernel's own words."""

    def offered(self) -> str:
        """e.g. `offers tbf, statistic; no netem (<the kernel's words>)`."""
        have = ", ".join(k for k in ("netem", "tbf", "statistic") if getattr(self, k)) or "none"
        return f"offers {have}" + "".join(f"; {n}" for n in self.notes)

    def describe(self) -> str:
        return f"link faults: kernel {self.offered()}"


class Shell(Protocol):
    """Where probes run: a cluster node, or a scratch container (`harness.docker_env`)."""

    def exec(self, command: list[str], timeout_s: int | None = None) -> tuple[int, str]: ...


def _probes(device: str) -> dict[str, str]:
    undo = f"tc qdisc del dev {device} root"
    return {
        "netem": f"tc qdisc add dev {device} root handle 9: netem delay 1ms && {undo}",
        "tbf": f"tc qdisc add dev {device} root handle 9: tbf rate 1gbit burst 64kb latency 50ms && {undo}",
        "statistic": "iptables -N KCHAOS-PROBE && "
        "iptables -A KCHAOS-PROBE -m statistic --mode random --probability 0.5 -j RETURN; "
        "code=$?; iptables -F KCHAOS-PROBE; iptables -X KCHAOS-PROBE; exit $code",
    }


def probe_kernel(shell: Shell, device: str = DEVICE) -> KernelCapabilities:
    """Try each mechanism for real inside a running container, on `device`, and undo it at once."""
    found: dict[str, bool] = {}
    notes: list[str] = []
    for name, script in _probes(device).items():
        code, output = shell.exec(["bash", "-c", script], timeout_s=10)
        found[name] = code == 0
        if code != 0:
            notes.append(
                f"no {name} ({output.strip().splitlines()[-1] if output.strip() else f'exit {code}'})"
            )
    return KernelCapabilities(found["netem"], found["tbf"], found["statistic"], tuple(notes))


def host_kernel_capabilities(image: str) -> KernelCapabilities:
    """Probe the kernel in a scratch container of `image` (no cluster needed; on its loopback: the
    qdiscs and matches a kernel offers are the same on every interface)."""
    with ScratchContainer(image, "kernel-probe") as container:
        return probe_kernel(container, device="lo")


def kernel_capabilities(cluster: KafkaCluster) -> KernelCapabilities:
    """Probe the kernel through the first running node of `cluster` (all share the host kernel)."""
    for node in cluster.nodes:
        if node.status() == "running":
            return probe_kernel(node)
    raise ClusterError("cannot probe kernel capabilities: no node of the cluster is running")


def _tc(node: Node, script: str) -> None:
    code, output = node.exec(["bash", "-c", script], timeout_s=20)
    if code != 0:
        raise FaultError(f"tc in {node.name} failed (exit {code}): {output.strip()[-400:]}")


_OUR_QDISCS = ("netem", "tbf")


def clear_qdisc(node: Node) -> str | None:
    """Back to the default root qdisc on the cluster interface; the kind of ours removed (netem,
    tbf), or None when there was none. A stopped container lost its qdiscs with its network
    namespace."""
    if node.status() in ("exited", "created", "dead", "missing"):
        return None
    code, output = node.exec(["tc", "qdisc", "show", "dev", DEVICE, "root"], timeout_s=20)
    found = next((kind for kind in _OUR_QDISCS if kind in output), None) if code == 0 else None
    if code == 0 and found is None:
        return None
    # `del` fails when only the default qdisc is left, which is the state we want: check that instead.
    code, output = node.exec(
        ["bash", "-c", f"tc qdisc del dev {DEVICE} root 2>/dev/null; tc qdisc show dev {DEVICE} root"],
        timeout_s=20,
    )
    if code != 0 or any(kind in output for kind in _OUR_QDISCS):
        raise FaultError(f"cannot remove the qdisc on {node.name}: {output.strip()[-300:]}")
    return found


@register
class Slow(Targeted):
    name = "slow"
    description = (
        "Limit the target's outgoing bandwidth (tc tbf) and, where the kernel has netem, "
        "add delay with jitter; heal restores the default queue."
    )

    def __init__(
        self,
        *,
        target: str | None = None,
        topic: str | None = None,
        partition: int | str | None = None,
        pick: str | None = None,
        rate_kbit: float | str = 1000,
        delay_ms: float | str = 100,
        jitter_ms: float | str = 20,
    ) -> None:
        super().__init__(target=target, topic=topic, partition=partition, pick=pick)
        self.rate_kbit = int(coerce_float("rate_kbit", rate_kbit, low=8, high=10_000_000))
        self.delay_ms = int(coerce_float("delay_ms", delay_ms, low=0, high=60_000))
        self.jitter_ms = int(coerce_float("jitter_ms", jitter_ms, low=0, high=60_000))
        self._touched: list[Node] = []

    def _script(self, netem: bool) -> str:
        # A burst of at least one full-size packet, and a queue of about half a second at the rate,
        # so packets are delayed rather than dropped by the limiter.
        burst = max(1600, self.rate_kbit * 1000 // 8 // 100)
        limit = max(burst * 2, self.rate_kbit * 1000 // 8 // 2)
        tbf = f"tbf rate {self.rate_kbit}kbit burst {burst} limit {limit}"
        if not netem or self.delay_ms == 0:
            return f"tc qdisc add dev {DEVICE} root handle 1: {tbf}"
        return (
            f"tc qdisc add dev {DEVICE} root handle 1: netem delay {self.delay_ms}ms {self.jitter_ms}ms "
            f"distribution normal && tc qdisc add dev {DEVICE} parent 1:1 handle 10: {tbf}"
        )

    def start(self, context: FaultContext, rng: random.Random) -> None:
        nodes = self.resolve(context, rng)
        caps = probe_kernel(nodes[0])
        if not caps.tbf:
            raise FaultError(f"slow needs the tbf qdisc: {caps.describe()}")
        self.detail.update(rate_kbit=self.rate_kbit, netem=caps.netem)
        if caps.netem:
            self.detail.update(delay_ms=self.delay_ms, jitter_ms=self.jitter_ms)
        elif self.delay_ms:
            self.detail["delay"] = "not applied: the kernel has no sch_netem (bandwidth limit only)"
        for node in nodes:
            self._touched.append(node)
            _tc(node, self._script(caps.netem))

    def heal(self, context: FaultContext) -> None:
        failures = Failures(FaultError)
        for node in self._touched:
            with failures.attempt():
                retry_heal_step(clear_qdisc, node)
        failures.raise_if_any()
        self._touched = []


@register
class Lossy(Targeted):
    name = "lossy"
    description = (
        "Drop a share of the target's packets at random, each direction (iptables statistic "
        "match): retries, timeouts, ISR churn."
    )

    def __init__(
        self,
        *,
        target: str | None = None,
        topic: str | None = None,
        partition: int | str | None = None,
        pick: str | None = None,
        probability: float | str = 0.2,
    ) -> None:
        super().__init__(target=target, topic=topic, partition=partition, pick=pick)
        self.probability = coerce_float("probability", probability, low=0.0, high=1.0)
        self._chain = FaultChain("LOSS")

    def start(self, context: FaultContext, rng: random.Random) -> None:
        self.detail["probability"] = self.probability
        # Loopback stays intact: the loss is on the network, not inside the broker's own host.
        rule = f"! -d 127.0.0.0/8 -m statistic --mode random --probability {self.probability:.4f} -j DROP"
        for node in self.resolve(context, rng):
            self._chain.add(node, [rule])

    def heal(self, context: FaultContext) -> None:
        self._chain.remove()
