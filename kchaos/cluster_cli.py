"""`kchaos cluster smoke | up | down | list | status`."""

from __future__ import annotations

import typer
from rich.text import Text

from contract.errors import ConfigError
from contract.history import new_run_id
from contract.nodes import node_name
from harness import docker_env
from harness.broker_config import ConfigValue
from harness.cluster import ClusterSpec, KafkaCluster
from harness.cluster_state import ClusterSnapshot
from harness.lossy import mounts as lossy_mounts
from kchaos import options
from kchaos.console import make_console
from kchaos.smoke import SMOKE_TOPIC, run_smoke

console = make_console()
MAX_SMOKE_MESSAGES = 10_000_000
cluster_app = typer.Typer(help="Start, inspect and stop clusters.", no_args_is_help=True)


def print_state(state: ClusterSnapshot) -> None:
    console.print(
        f"controller: {node_name(state.controller) if state.controller is not None else None} "
        f"(epoch {state.controller_epoch}); "
        f"live brokers: {list(state.live_brokers)}"
    )
    for p in state.partitions:
        console.print(
            f"  {p.topic}/{p.partition}: leader {p.leader} (epoch {p.leader_epoch}), "
            f"isr {list(p.isr)}, replicas {list(p.replicas)}"
        )


def parse_overrides(pairs: list[str]) -> dict[str, ConfigValue]:
    overrides: dict[str, ConfigValue] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"--config {pair!r}: expected KEY=VALUE, e.g. min.insync.replicas=2")
        overrides[key.strip()] = value.strip()
    return overrides


@cluster_app.command()
def smoke(
    messages: int = typer.Option(1000, help="Writes to send with acks=all."),
    kafka: str = typer.Option(None, help=options.KAFKA_OPTION_HELP),
    metadata: str = typer.Option(None, help=options.METADATA_OPTION_HELP),
) -> None:
    """Start 3 brokers and their metadata quorum, write, kill and restart a leader, read every write
    back, tear down."""
    options.integer("--messages", messages, 1, MAX_SMOKE_MESSAGES)
    result = run_smoke(messages, kafka=kafka, metadata=metadata)
    print_state(result.state)
    console.print(
        f"Kafka {result.kafka_version}: leader {result.killed_leader} of {SMOKE_TOPIC}/0 killed, "
        f"{result.new_leader} led until it was back in the ISR"
    )
    console.print(
        f"sent {result.sent}, acked {result.acked}, read back {result.read_back} in {result.seconds:.1f} s:",
        Text("OK", style="green") if result.ok else Text("FAILED", style="red"),
    )
    raise typer.Exit(0 if result.ok else 1)


@cluster_app.command()
def up(
    brokers: int = typer.Option(3, help="Number of Kafka brokers."),
    zookeepers: int = typer.Option(1, help="Number of ZooKeeper nodes (1, 3 or 5)."),
    config: list[str] = typer.Option([], "--config", help="Broker config override KEY=VALUE (repeatable)."),
    image: str = typer.Option(None, help="A kchaos/kafka image tag (default: build from --kafka)."),
    kafka: str = typer.Option(None, help=options.KAFKA_OPTION_HELP),
    metadata: str = typer.Option(None, help=options.METADATA_OPTION_HELP),
    controllers: int = typer.Option(1, help="KRaft: voters of the metadata quorum (1, 3 or 5)."),
    combined: bool = typer.Option(False, help="KRaft: the first brokers are the controllers too."),
    disk: str = typer.Option(
        "plain", help="lossy: each node's data on a lossy disk of its own (power-loss, disk faults)."
    ),
    name: str = typer.Option("cluster", help="A word to put in the run id."),
) -> None:
    """Start a cluster that outlives this command; print its run id and addresses."""
    spec = ClusterSpec(
        brokers=brokers,
        zookeepers=zookeepers,
        broker_config=parse_overrides(config),
        image=image,
        kafka=kafka,
        metadata=metadata,
        controllers=controllers,
        combined=combined,
        disk=disk,
    )
    cluster = KafkaCluster(spec, run_id=new_run_id(name))
    cluster.start()
    quorum = (
        f"controllers: {', '.join(f'{n.name} {n.ip}' for n in cluster.voters)}"
        if cluster.kraft
        else f"zookeeper:  {cluster.zk_connect}"
    )
    console.print(f"run id:     {cluster.run_id}\nbootstrap:  {cluster.bootstrap_servers}\n{quorum}")
    console.print(f"stop it with: kchaos cluster down {cluster.run_id}")


@cluster_app.command()
def down(run_id: str = typer.Argument(..., help="Run id printed by `kchaos cluster up`.")) -> None:
    """Remove a cluster started by `kchaos cluster up`."""
    removed = docker_env.remove_labelled(run_id)
    unmounted = lossy_mounts.remove_run(run_id)
    if not removed.containers and not removed.networks and not unmounted:
        raise ConfigError(f"no cluster with run id {run_id!r} (see `kchaos cluster list`)")
    console.print(f"removed {len(removed.containers)} containers and {len(removed.networks)} networks")
    if unmounted:
        console.print(f"unmounted {len(unmounted)} lossy disks")


@cluster_app.command("list")
def list_clusters() -> None:
    """List running kchaos clusters by run id."""
    runs: dict[str, list[str]] = {}
    for container in docker_env.client().containers.list(all=True, filters={"label": docker_env.RUN_LABEL}):
        runs.setdefault(container.labels[docker_env.RUN_LABEL], []).append(
            f"{container.labels.get('kchaos.node')}:{container.status}"
        )
    for run_id, nodes in sorted(runs.items()):
        console.print(f"{run_id}  {' '.join(sorted(nodes))}")
    if not runs:
        console.print("no kchaos clusters")


@cluster_app.command()
def status(run_id: str = typer.Argument(..., help="Run id printed by `kchaos cluster up`.")) -> None:
    """Print controller, live brokers, and every partition's leader and ISR."""
    with KafkaCluster.attach(run_id) as cluster:
        console.print(f"bootstrap: {cluster.bootstrap_servers}")
        for node in cluster.nodes:
            console.print(f"  {node.name:10} {node.ip:15} {node.status()}")
        print_state(cluster.state())


def register(app: typer.Typer) -> None:
    app.add_typer(cluster_app, name="cluster")
