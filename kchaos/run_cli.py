"""`kchaos run` (one scenario, or a matrix for nightly jobs) and `kchaos scenarios`."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import typer
from rich.table import Table
from rich.text import Text

from contract.anomaly_kinds import COUNT_KEYS, counts_of_run
from contract.errors import ConfigError, HarnessError
from contract.events import fault_windows
from contract.history import ACKS_MODES, FAULTS
from contract.history_readers import iter_fault_events
from contract.limits import MAX_DURATION_S, MAX_SEED, brief
from harness.broker_config import KafkaVersion
from harness.client_choice import ClientChoice, resolve
from harness.images import default_release
from harness.java_client import build
from harness.maven_release import is_version
from kchaos import options
from kchaos.console import make_console
from kchaos.crash import note_run_dir
from kchaos.group_lines import acks_after_heals, every_guarantee, group_lines
from kchaos.plain_summary import plain_summary
from kchaos.progress import phase_times, run_ticker
from kchaos.runner import RunOutcome, run_scenario
from kchaos.scenario import Scenario, builtin_scenarios, check_aims, load_scenario
from kchaos.scenario_dump import on_client, on_release
from reports import write_index

console = make_console()
MAX_BUDGET_S = 365 * 24 * 3600


def scenarios() -> None:
    """List the built-in scenarios and what Kafka is expected to do in each."""
    table = Table(show_lines=True)
    table.add_column("scenario")
    table.add_column("faults")
    table.add_column("what Kafka should do")
    for s in builtin_scenarios():
        faults = (
            ", ".join(sorted({n for n, _ in s.faults.faults} | {e["fault"] for e in s.faults.schedule}))
            or "none"
        )
        table.add_row(s.name, faults, s.description)
    console.print(table)


def _print_outcome(outcome: RunOutcome) -> None:
    result = outcome.result
    table = Table(title=f"{outcome.scenario}: guarantees")
    for column in ("topic or group", "promise", "verdict", "reason"):
        table.add_column(column)
    colour = {
        "held": "green",
        "violated": "red",
        "not-promised": "yellow",
        "unknown": "yellow",
        "not-exercised": "blue",
    }
    for whose, g in every_guarantee(result):
        verdict = g.get("verdict", "?")
        table.add_row(
            whose,
            str(g.get("promise", "")),
            Text(verdict, style=colour.get(verdict, "white")),
            str(g.get("reason", "")),
        )
    console.print(table)
    for e in outcome.expectations:
        held = Text(e.verdict if e.held else e.verdict.upper(), style=colour.get(e.verdict, "red"))
        why = f"; {e.why}" if e.why else ""
        console.print(Text.assemble(f"  expect {e.text}: ", held, f" (observed {e.observed}{why})"))
    for acks, counts in result.get("acks", {}).items():
        if counts.get("attempted"):
            counted = ", ".join(f"{k} {counts.get(k)}" for k in counts_of_run(COUNT_KEYS, result))
            console.print(f"  acks={acks}: {counted}{acks_after_heals(counts)}")
    for line in group_lines(result):
        console.print(f"  {line}")
    console.print(f"run directory: {outcome.rundir.root}")
    if outcome.report:
        console.print(f"report: {outcome.report}")
    verdict = Text("PASS", style="green") if outcome.exit_code == 0 else Text("FAIL", style="red")
    interrupted = " (interrupted)" if outcome.interrupted else ""
    checked_s = {"check": result["spark"]["seconds"]} if result.get("spark") else {}
    took = phase_times(outcome.phases_s | checked_s)
    console.print(Text.assemble(verdict, interrupted, f"  {took}" if took else ""))
    faults_path = outcome.rundir.root / FAULTS
    windows = fault_windows(iter_fault_events(outcome.rundir.root), str(faults_path))
    for line in plain_summary(result, windows, outcome.exit_code):
        console.print(line, soft_wrap=True)


def run(
    scenario: str = typer.Argument(
        ...,
        help="A built-in scenario name (see `kchaos scenarios`) or a YAML file; "
        "with --matrix, a comma-separated list.",
    ),
    duration: float = typer.Option(None, help="Override the scenario's duration_s."),
    seed: int = typer.Option(None, help="Override the scenario's seed (the fault schedule follows it)."),
    out: Path = typer.Option(Path("runs"), help="Directory under which run directories are created."),
    master: str = typer.Option(None, help="Spark master URL for the check (default: local[*])."),
    matrix: bool = typer.Option(
        False, help="Run every scenario x acks set x seed, then write the index page."
    ),
    seeds: str = typer.Option(
        None,
        help="Comma-separated seeds: the scenario runs once per seed (a matrix; with --matrix, default 1).",
    ),
    acks_sets: str = typer.Option(
        None,
        "--acks-sets",
        help="With --matrix: acks sets separated by ';', e.g. 'all;1;0,1,all' (default 0,1,all; "
        "with several --kafka releases and no --matrix, the scenario's own).",
    ),
    budget: float = typer.Option(3600.0, help="With --matrix: stop starting runs after this many seconds."),
    kafka: str = typer.Option(
        None,
        help="Kafka release(s), comma-separated: each a version from Maven Central (e.g. 3.9.1), a "
        "tarball or a directory. Several run the scenario on each (a matrix; the index compares them).",
    ),
    metadata: str = typer.Option(None, help=options.METADATA_OPTION_HELP),
    client: str = typer.Option(
        None,
        help="The workload's client(s), comma-separated: librdkafka, java, or java:<kafka-clients "
        "release> (e.g. java:3.9.1; java alone: the brokers' release). Over the scenario's "
        "workload.client; parts that name their own keep it. Several run the scenario on each (a "
        "matrix; the index compares them).",
    ),
) -> None:
    """Run a chaos experiment end to end: cluster, workload, faults, heal, final read, check, report."""
    options.number("--duration", duration, 1.0, MAX_DURATION_S)
    options.integer("--seed", seed, 0, MAX_SEED)
    releases = options.releases("--kafka", kafka)
    clients = client_choices("--client", client)
    if seed is not None and seeds is not None:
        raise ConfigError("--seed and --seeds: give one (--seeds runs the scenario once per seed)")
    # several releases, clients, scenarios or seeds: a matrix with each scenario's own acks modes
    if not matrix and (len(releases) > 1 or len(clients) > 1 or "," in scenario or seeds is not None):
        matrix = True
        seeds = seeds if seeds is not None else "" if seed is None else str(seed)
    elif matrix:
        seeds = seeds if seeds is not None else "1"
        acks_sets = acks_sets if acks_sets is not None else ",".join(ACKS_MODES)
    if not matrix:
        loaded = on_client(on_release(load_scenario(scenario), releases[0], metadata), clients[0])
        prebuild(loaded)
        options.output_dir("--out", out)
        console.print(Text.assemble((loaded.name, "bold"), f": {loaded.description}"))
        outcome = run_scenario(
            loaded, out, duration_s=duration, seed=seed, master=master, on_tick=run_ticker(console)
        )
        console.print()
        _print_outcome(outcome)
        raise typer.Exit(outcome.exit_code)
    raise typer.Exit(
        _run_matrix(scenario, duration, seeds, acks_sets, out, master, budget, releases, metadata, clients)
    )


def prebuild(scenario: Scenario) -> None:
    """Resolve the scenario's clients before its cluster starts, when its Kafka release is a version:
    the Java program is built for each kafka-clients release it runs (minutes the first time, from
    the cache after), and a client that cannot run is exit 2 now, not after the cluster is up."""
    cluster = scenario.experiment.cluster
    release = cluster.kafka or (default_release() if cluster.image is None else None)
    if release is None or not is_version(release):
        return
    for choice in scenario.experiment.workload.client_choices():
        resolve(choice, KafkaVersion.parse(release))


def client_choices(option: str, text: str | None) -> list[ClientChoice | None]:
    """The clients a comma-separated `option` names, in order and once each; [None] (the scenario's
    own) when not given. A named kafka-clients release is built now (or found in the cache), so that
    one Maven Central lacks is exit 2 before any cluster starts."""
    if text is None:
        return [None]
    entries = [entry.strip() for entry in text.split(",")]
    if not all(entries):
        raise ConfigError(f"{option} {text!r}: an empty client between commas (e.g. librdkafka,java)")
    chosen = list(dict.fromkeys(ClientChoice.parse(entry, option) for entry in entries))
    for choice in chosen:
        if choice.is_java and choice.version is not None:
            build(choice.version)
    return list(chosen)


def _run_matrix(
    names: str,
    duration: float | None,
    seeds: str,
    acks_sets: str | None,
    out: Path,
    master: str | None,
    budget_s: float,
    releases: list[str | None],
    metadata: str | None = None,
    clients: list[ClientChoice | None] | None = None,
) -> int:
    """Every scenario x acks set x seed x release x client; `seeds` empty: each scenario's own seed;
    `acks_sets` None: each scenario's own acks modes; `clients` [None]: each scenario's own client."""
    client_list = clients or [None]
    options.number("--budget", budget_s, 0.0, MAX_BUDGET_S)
    try:
        seed_list: list[int | None] = [int(s) for s in seeds.split(",") if s.strip()] or [None]
    except ValueError:
        raise ConfigError(f"--seeds {brief(seeds)}: expected comma-separated integers") from None
    for one in seed_list:
        options.integer("--seeds", one, 0, MAX_SEED)
    loaded = [load_scenario(n.strip()) for n in names.split(",") if n.strip()]
    acks_list: list[tuple[str, ...] | None] = (
        [
            tuple(a.strip() for a in group.split(",") if a.strip())
            for group in acks_sets.split(";")
            if group.strip()
        ]
        if acks_sets is not None
        else [None]
    )
    if (
        not seed_list
        or not loaded
        or not acks_list
        or any(a not in ACKS_MODES for g in acks_list for a in g or ())
    ):
        raise ConfigError(
            f"--matrix needs scenarios, --seeds and --acks-sets of {', '.join(ACKS_MODES)}; "
            f"got {brief(names)}, {brief(seeds)}, {brief(acks_sets)}"
        )
    options.output_dir("--out", out)
    combos = [
        (s, a, seed, k, c)
        for s in loaded
        for a in acks_list
        for seed in seed_list
        for k in releases
        for c in client_list
    ]
    console.print(
        f"matrix: {len(combos)} runs ({len(loaded)} scenarios x {len(acks_list)} acks sets x "
        f"{len(seed_list)} seeds x {len(releases)} Kafka releases x {len(client_list)} clients)"
    )
    started, worst, skipped = time.monotonic(), 0, 0
    for scenario, acks, seed, release, client in combos:
        if time.monotonic() - started > budget_s:
            skipped += 1
            continue
        on = f" kafka={release}" if release else ""
        on += f" client={client.text}" if client else ""
        modes = ",".join(acks or scenario.experiment.workload.acks)
        shown_seed = seed if seed is not None else scenario.experiment.seed
        console.print(f"--- {scenario.name} acks={modes} seed={shown_seed}{on}")
        try:
            variant = on_release(matrix_variant(scenario, acks) if acks else scenario, release, metadata)
            variant = on_client(variant, client)
            prebuild(variant)
            outcome = run_scenario(variant, out, duration_s=duration, seed=seed, master=master)
            _print_outcome(outcome)
        except HarnessError as exc:
            console.print(Text.assemble(("could not run:", "red"), " ", str(exc)), soft_wrap=True)
            worst = max(worst, 2)
            continue
        worst = max(worst, outcome.exit_code)
        if outcome.interrupted:
            break  # Ctrl-C ends the matrix after the run it cut short was checked
    note_run_dir(None)  # what follows is about all runs, not the last one
    if skipped:
        console.print(f"{skipped} runs skipped: the {budget_s:.0f} s budget was used up", style="yellow")
    console.print(f"index: {write_index(out)}")
    return worst


def matrix_variant(scenario: Scenario, acks: tuple[str, ...]) -> Scenario:
    """`scenario` writing only under `acks`, without its expectations on the other modes: they would
    say nothing of this run, and its scenario.yaml would not load again for `kchaos replay`. A fault
    aimed at a topic of another mode is a ConfigError: the run would go on without its chaos."""
    workload = scenario.experiment.workload.with_acks(acks)
    experiment = dataclasses.replace(scenario.experiment, workload=workload)
    try:
        check_aims(scenario.faults, experiment)
    except ConfigError as exc:
        raise ConfigError(f"{scenario.source}: with acks {','.join(acks)}: {exc}") from None
    return dataclasses.replace(
        scenario,
        experiment=experiment,
        expectations=[e for e in scenario.expectations if e.acks is None or e.acks in acks],
    )


def register(app: typer.Typer) -> None:
    app.command()(run)
    app.command()(scenarios)
