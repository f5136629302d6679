"""`kchaos workload`: the workload against a fresh cluster, with no faults."""

from __future__ import annotations

from pathlib import Path

import typer

from contract.history import RunDir, new_run_id
from contract.limits import MAX_DURATION_S, MAX_MESSAGE_BYTES, MAX_PRODUCERS, MAX_RATE
from harness.cluster import ClusterSpec
from harness.experiment import ExperimentSpec, run_experiment
from harness.workload import Workload, WorkloadSpec
from kchaos import options
from kchaos.cluster_cli import parse_overrides
from kchaos.console import make_console
from kchaos.crash import note_run_dir
from kchaos.progress import Progress, phase_times, summary_table

console = make_console()


def workload(
    duration: float = typer.Option(30.0, help="Seconds of writing."),
    acks: str = typer.Option("0,1,all", help="Comma-separated acks modes, one topic each."),
    out: Path = typer.Option(Path("runs"), help="Directory under which the run directory is created."),
    rate: float = typer.Option(
        200.0, help="Writes per second per producer process; 0 = as fast as possible."
    ),
    producers: int = typer.Option(1, help="Producer processes per acks mode."),
    message_size: int = typer.Option(0, help="Pad each value to this many bytes."),
    brokers: int = typer.Option(3, help="Kafka brokers."),
    config: list[str] = typer.Option(["min.insync.replicas=2"], "--config", help="Broker config KEY=VALUE."),
    producer_config: list[str] = typer.Option([], "--producer-config", help="librdkafka producer KEY=VALUE."),
    image: str = typer.Option(None, help="A kchaos/kafka image tag (default: build from the default Kafka)."),
) -> None:
    """Run producers under each acks mode and consumers against a fresh cluster, with no faults."""
    options.number("--duration", duration, 1.0, MAX_DURATION_S)
    options.number("--rate", rate, 0.0, MAX_RATE)
    options.integer("--producers", producers, 1, MAX_PRODUCERS)
    options.integer("--message-size", message_size, 0, MAX_MESSAGE_BYTES)
    spec = ExperimentSpec(
        name="workload",
        duration_s=duration,
        cluster=ClusterSpec(brokers=brokers, broker_config=parse_overrides(config), image=image),
        workload=WorkloadSpec(
            acks=tuple(a.strip() for a in acks.split(",") if a.strip()),
            producers_per_mode=producers,
            rate_per_s=rate,
            message_size=message_size,
            producer_config=parse_overrides(producer_config),
            replication_factor=min(3, brokers),
        ),
    )
    options.output_dir("--out", out)
    run_id = new_run_id("workload")
    rundir = RunDir(out / run_id)
    note_run_dir(rundir.root)
    console.print(f"run directory: {rundir.root}")
    last: dict[str, Workload] = {}
    progress = Progress(console)

    def tick(w: Workload, left: float) -> None:
        last["w"] = w
        progress(w, left)

    result = run_experiment(spec, rundir, run_id, on_tick=tick)
    console.print()
    if "w" in last:
        console.print(summary_table(last["w"].counts(), duration))
    final = result.final_read
    assert final is not None
    console.print(
        f"final read: {len(final.complete)} partitions complete, {len(final.incomplete)} incomplete, "
        f"{final.records} records; {phase_times(result.phases_s)}"
    )
    console.print(f"history: {rundir.root}")
    raise typer.Exit(130 if result.interrupted else 0)


def register(app: typer.Typer) -> None:
    app.command()(workload)
