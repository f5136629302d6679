"""`kchaos faults` (list faults) and `kchaos fault NAME` (one fault against a running cluster)."""

from __future__ import annotations

import random
import time

import typer
from rich.text import Text

from contract.errors import ClusterError, ConfigError, FaultError, ReadinessTimeout
from contract.limits import MAX_DURATION_S, MAX_SEED
from faults.base import FaultContext, available, make_fault, params_help
from faults.leftovers import heal_leftovers
from faults.links import kernel_capabilities
from faults.process import REJOIN_TIMEOUT_S
from faults.targets import PICK_MEANINGS, TARGETS
from faults.triggers import EVENTS
from harness.cluster import KafkaCluster
from kchaos import options
from kchaos.cluster_cli import print_state
from kchaos.console import make_console

console = make_console()


def list_faults(
    run: str = typer.Option(
        None, "--run", help="Also probe the kernel of this running cluster for netem/tbf."
    ),
) -> None:
    """List the faults with a one-line description and their params."""
    for name, description in available():
        params = ", ".join(f"{k}={v}" for k, v in params_help(name).items())
        console.print(Text(f"{name:<16}", style="bold"), description, soft_wrap=True)
        console.print(Text.assemble(" " * 17, (f"params: {params}", "dim")), soft_wrap=True)
    for title, words in (
        ("targets (resolved from ZooKeeper when a fault starts; or node names like kafka-2,zk-1)", TARGETS),
        ("pick (partition roles choose their partition: words joined by commas)", PICK_MEANINGS),
        ("after (a schedule step's event)", EVENTS),
    ):
        console.print(Text(f"\n{title}:", style="bold"))
        for word, meaning in words.items():
            console.print(f"  {word:<20}{meaning}", soft_wrap=True)
    if run is not None:
        cluster = KafkaCluster.attach(run)
        try:
            console.print(kernel_capabilities(cluster).describe())
        finally:
            cluster.close()


def _parse_params(pairs: list[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--param {pair!r}: expected KEY=VALUE, e.g. shape=halves")
        params[key.strip()] = value.strip()
    return params


def run_fault(
    name: str = typer.Argument(..., help="Fault name (see `kchaos faults`)."),
    run: str = typer.Option(..., "--run", help="Run id of a cluster from `kchaos cluster up`."),
    target: str = typer.Option(
        None,
        "--target",
        help="leader, follower, controller, one, minority, majority, all, zookeeper, or kafka-1,zk-1...",
    ),
    duration: float = typer.Option(15.0, "--duration", help="Seconds to hold the fault before healing."),
    param: list[str] = typer.Option(
        [], "--param", help="Fault param KEY=VALUE (repeatable), e.g. shape=halves."
    ),
    seed: int = typer.Option(None, "--seed", help="Seed for random target choices (default: random)."),
    settle: float = typer.Option(60.0, "--settle", help="Seconds to wait for full ISR after healing."),
) -> None:
    """Start one fault against a running cluster, hold it (Ctrl-C heals early), heal, show the state."""
    options.number("--duration", duration, 0.0, MAX_DURATION_S)
    options.number("--settle", settle, 0.0, MAX_DURATION_S)
    options.integer("--seed", seed, 0, MAX_SEED)
    params = _parse_params(param)
    if target is not None:
        params["target"] = target
    fault = make_fault(name, params)
    rng = random.Random(seed)
    cluster = KafkaCluster.attach(run)
    try:
        console.print("before", style="bold")
        print_state(cluster.state())
        try:
            fault.start(FaultContext(cluster), rng)  # a cluster alone: no workload's handles
            console.print(
                Text(name, style="bold"),
                f"on {', '.join(fault.targets)} {fault.detail};",
                f"healing in {duration:g} s (Ctrl-C to heal now)",
            )
            time.sleep(duration)  # the fault's own duration, not a readiness wait
            console.print("during", style="bold")
            try:
                print_state(cluster.state())
            except ClusterError as exc:  # e.g. ZooKeeper itself is the target
                console.print(f"cannot read the state now: {exc}", style="yellow")
        except KeyboardInterrupt:
            console.print("interrupted: healing")
        finally:
            try:
                fault.heal(FaultContext(cluster))
            except FaultError as exc:
                raise FaultError(f"{exc}; `kchaos heal {run}` removes what is left") from None
        console.print(f"healed {name} on {', '.join(fault.targets)}")
        topics = cluster.metadata.topics()
        if topics and settle:
            try:
                cluster.wait_for_isr(topics, timeout_s=settle)
            except ReadinessTimeout:
                console.print(f"ISR not full within {settle:g} s of healing", style="yellow")
        console.print("after", style="bold")
        print_state(cluster.state())
    finally:
        cluster.close()


def heal(
    run_id: str = typer.Argument(..., help="Run id of a live cluster (see `kchaos cluster list`)."),
    timeout: float = typer.Option(
        REJOIN_TIMEOUT_S, "--timeout", min=1, help="Seconds to wait for restarted nodes to be up again."
    ),
) -> None:
    """Undo every fault kafka-chaos may have left on a live cluster, e.g. after `kchaos fault` was
    killed before it healed.

    In every container of the run: resumes paused containers; removes every KCHAOS iptables chain
    with its rules and the jumps to it, and the tc qdisc link faults put on eth0; starts stopped or
    killed nodes again with their data (ZooKeeper or controllers first; a broker once its old
    ZooKeeper session has expired, as a fault's own heal does), since a node of a kchaos cluster is
    down only because of a fault or a crash, and each restart is printed with the exit code it had.
    Then waits until every broker is registered (in ZooKeeper or the KRaft quorum) and prints the
    state (replicas may still be catching up into the ISR). It neither removes the cluster (`kchaos
    cluster down`) nor undoes what the faults caused (lost writes, elections).
    """
    cluster = KafkaCluster.attach(run_id, connect=False)  # ZooKeeper may be paused or cut off
    healed: list[str] = []

    def report(line: str) -> None:
        healed.append(line)
        console.print(f"healed {line}")

    try:
        heal_leftovers(cluster, report, timeout)
        if not healed:
            console.print(f"nothing to heal on {run_id}")
        print_state(cluster.state())
    finally:
        cluster.close()


def register(app: typer.Typer) -> None:
    app.command("faults")(list_faults)
    app.command("fault")(run_fault)
    app.command("heal")(heal)
