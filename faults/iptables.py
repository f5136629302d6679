"""Our iptables rules inside a container: one dedicated chain per started fault, jumped to from INPUT
and OUTPUT, so heal removes exactly that fault's rules: not those of another fault still active on
the same node (explicit timelines may overlap), nor anything Docker or the image put there."""

from __future__ import annotations

import itertools
import os
import shlex
from collections.abc import Iterable

from contract.errors import ClusterError, Failures, FaultError
from faults.base import retry_heal_step
from harness.services import Node

CHAIN_PREFIX = "KCHAOS"
_chain_numbers = itertools.count(1)


def new_chain(kind: str) -> str:
    """A chain name no other fault uses, e.g. `KCHAOS-PART-4711-3`: with the process id, since two
    `kchaos fault` commands may act on one cluster (iptables allows 28 characters: `kind` is a tag)."""
    return f"{CHAIN_PREFIX}-{kind}-{os.getpid()}-{next(_chain_numbers)}"


def _hook(chain: str) -> str:
    return (
        f"iptables -N {chain} 2>/dev/null || true; "
        f"iptables -C INPUT -j {chain} 2>/dev/null || iptables -I INPUT 1 -j {chain}; "
        f"iptables -C OUTPUT -j {chain} 2>/dev/null || iptables -I OUTPUT 1 -j {chain}; "
    )


def add_rules(node: Node, chain: str, rules: Iterable[str]) -> None:
    """Append `rules` (each the arguments after `iptables -A CHAIN`) to `chain` inside `node`."""
    script = "set -e; " + _hook(chain) + "".join(f"iptables -A {chain} {rule}; " for rule in rules)
    try:
        code, output = node.exec(["bash", "-c", script], timeout_s=20)
    except ClusterError as exc:
        raise FaultError(f"cannot add iptables rules in {node.name}: {exc}") from None
    if code != 0:
        raise FaultError(f"iptables in {node.name} failed (exit {code}): {output.strip()[-500:]}")


def drop_from_and_to(ips: Iterable[str]) -> list[str]:
    """Rules dropping every packet from and to each IP: not only new connections, so established
    ones (replica fetchers, ZooKeeper sessions) go silent too, as in a real partition."""
    return [rule for ip in ips for rule in (f"-s {ip} -j DROP", f"-d {ip} -j DROP")]


def drop_to(ips: Iterable[str]) -> list[str]:
    """Rules dropping every packet this node sends to each IP (and none it receives): a one-way cut."""
    return [f"-d {ip} -j DROP" for ip in ips]


def remove_chain(node: Node, chain: str) -> None:
    """Unhook and delete `chain` in `node`. A stopped container is skipped: its network namespace,
    rules included, is gone, and a restart starts with none."""
    if node.status() in ("exited", "created", "dead", "missing"):
        return
    script = (
        f"while iptables -D INPUT -j {chain} 2>/dev/null; do :; done; "
        f"while iptables -D OUTPUT -j {chain} 2>/dev/null; do :; done; "
        f"iptables -F {chain} 2>/dev/null; iptables -X {chain} 2>/dev/null; "
        f"! iptables -S {chain} >/dev/null 2>&1"
    )
    try:
        code, output = node.exec(["bash", "-c", script], timeout_s=20)
    except ClusterError as exc:
        raise FaultError(f"cannot remove iptables chain {chain} in {node.name}: {exc}") from None
    if code != 0:
        raise FaultError(f"iptables chain {chain} still present in {node.name}: {output.strip()[-300:]}")


class FaultChain:
    """The chain of one started fault (`new_chain`) and the nodes it was put in, so that heal visits
    each of them, also after a start that failed half-way."""

    def __init__(self, kind: str) -> None:
        self.name = new_chain(kind)
        self._nodes: list[Node] = []

    def add(self, node: Node, rules: Iterable[str]) -> None:
        self._nodes.append(node)  # before applying: a heal after a failure here must visit it
        add_rules(node, self.name, rules)

    def remove(self) -> None:
        """Remove the chain from every node it was put in (each tried again when it fails); one
        FaultError naming each that still failed."""
        failures = Failures(FaultError)
        for node in self._nodes:
            with failures.attempt():
                retry_heal_step(remove_chain, node, self.name)
        failures.raise_if_any()
        self._nodes = []


def leftover_rules(node: Node) -> list[str]:
    """Our chains, their rules and hooks still present in `node` (empty when clean); for checks after
    a heal."""
    return [line for line in _rules(node).splitlines() if CHAIN_PREFIX in line]


def _rules(node: Node) -> str:
    try:
        code, output = node.exec(["iptables", "-S"], timeout_s=20)
    except ClusterError as exc:
        raise FaultError(f"cannot list iptables rules in {node.name}: {exc}") from None
    if code != 0:
        raise FaultError(f"cannot list iptables rules in {node.name} (exit {code}): {output.strip()[-300:]}")
    return output


def removal_commands(rules: str) -> tuple[list[str], list[list[str]]]:
    """From `iptables -S` output: our chains, and the commands removing them, whichever fault or
    process made them: every rule of another chain that jumps to one of ours, then each chain
    flushed and deleted."""
    chains: list[str] = []
    unhooks: list[list[str]] = []
    for line in rules.splitlines():
        words = shlex.split(line)
        if len(words) >= 2 and words[0] == "-N" and words[1].startswith(CHAIN_PREFIX):
            chains.append(words[1])
        elif len(words) >= 2 and words[0] == "-A" and not words[1].startswith(CHAIN_PREFIX):
            targets = [words[i + 1] for i, w in enumerate(words[:-1]) if w in ("-j", "-g")]
            if any(t.startswith(CHAIN_PREFIX) for t in targets):
                unhooks.append(["iptables", "-D", *words[1:]])
    flushes = [["iptables", "-F", chain] for chain in chains]
    deletes = [["iptables", "-X", chain] for chain in chains]
    return chains, unhooks + flushes + deletes


def remove_all_chains(node: Node) -> list[str]:
    """Remove every chain of ours, with its rules and the jumps to it, from the running `node`;
    return the chains removed. FaultError when any of our rules is left."""
    chains, commands = removal_commands(_rules(node))
    if commands:
        script = "; ".join(shlex.join(command) for command in commands)
        try:
            node.exec(["bash", "-c", script], timeout_s=20)
        except ClusterError as exc:
            raise FaultError(f"cannot remove iptables chains in {node.name}: {exc}") from None
    left = leftover_rules(node)
    if left:
        raise FaultError(f"iptables rules of ours still in {node.name}: {'; '.join(left[:5])}")
    return chains
