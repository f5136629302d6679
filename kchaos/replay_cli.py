"""`kchaos replay RUN_DIR` (run a finished run again, count how often it breaks the same promises)
and `kchaos shrink RUN_DIR` (find a smaller fault timeline that still breaks one of them)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import typer
from rich.text import Text

from contract.errors import ConfigError
from contract.history import write_atomic
from faults.schedule import ScheduleEntry
from kchaos import options
from kchaos.console import make_console
from kchaos.crash import note_run_dir
from kchaos.progress import run_ticker
from kchaos.replay import Breakage, RecordedRun, breakages, load_recorded_run
from kchaos.runner import RunOutcome, run_scenario
from kchaos.scenario import Scenario
from kchaos.scenario_dump import scenario_yaml, with_timeline
from kchaos.shrink import Candidate, Step, Timeline, reproduces, shrink

console = make_console()
MAX_RUNS = 1000
SHRUNK = "shrunk.yaml"

RUN_DIR = typer.Argument(..., help="A run directory written by `kchaos run`.")
OUT = typer.Option(Path("runs"), help="Directory under which the new runs' directories are created.")
MASTER = typer.Option(None, help="Spark master URL for the checks (default: local[*]).")


def _broke(outcome: RunOutcome) -> list[Breakage]:
    return breakages(outcome.result, outcome.expectations)


def _keys(found: list[Breakage]) -> str:
    return "; ".join(b.key for b in found) or "nothing"


def _introduce(recorded: RecordedRun) -> None:
    spec = recorded.scenario.experiment
    console.print(
        f"{recorded.root}: scenario {recorded.scenario.name}, seed {spec.seed}, "
        f"{_timeline(recorded.scenario).describe()}, image {recorded.image}",
        soft_wrap=True,
    )
    console.print(f"it broke: {_keys(recorded.broke)}", soft_wrap=True)


def replay(
    run_dir: Path = RUN_DIR,
    times: int = typer.Option(3, help="How many times to run it again."),
    out: Path = OUT,
    master: str = MASTER,
) -> None:
    """Run a finished run again (same scenario, seed, fault timeline and Kafka image) and print how
    often each promise it broke broke again. Exit 1 if any replay broke a promise."""
    options.integer("--times", times, 1, MAX_RUNS)
    note_run_dir(run_dir)
    recorded = load_recorded_run(run_dir)
    options.output_dir("--out", out)
    _introduce(recorded)
    again = {b.key: 0 for b in recorded.broke}
    failed = made = 0
    for number in range(1, times + 1):
        outcome = run_scenario(recorded.scenario, out, master=master, on_tick=run_ticker(console))
        if outcome.interrupted:
            console.print(f"\nreplay {number} interrupted: {outcome.rundir.root}")
            raise typer.Exit(130)
        made += 1
        broke = _broke(outcome)
        failed += outcome.exit_code != 0
        for b in broke:
            if b.key in again:
                again[b.key] += 1
        console.print(
            f"\nreplay {number}/{times}: broke {_keys(broke)} ({outcome.rundir.root})", soft_wrap=True
        )
    for key, count in again.items():
        console.print(f"{key}: broke again in {count} of {made} replays", soft_wrap=True)
    console.print(f"replays that broke a promise: {failed} of {made}")
    raise typer.Exit(1 if failed else 0)


def _timeline(scenario: Scenario) -> Timeline:
    entries = tuple(
        ScheduleEntry(e["at_s"], round(e["at_s"] + e["duration_s"], 3), e["fault"], e["params"])
        for e in scenario.faults.schedule
    )
    return Timeline(entries, scenario.experiment.duration_s)


def _target(recorded: RecordedRun, failure: str | None) -> str:
    keys = [b.key for b in recorded.broke]
    if not keys:
        raise ConfigError(f"{recorded.root}: the run broke no promise, so there is nothing to shrink")
    if failure is None:
        return keys[0]
    if failure not in keys:
        raise ConfigError(f"--failure {failure!r}: the run did not break that; it broke: {'; '.join(keys)}")
    return failure


def shrink_run(
    run_dir: Path = RUN_DIR,
    failure: str = typer.Option(
        None, help="Which broken promise to keep breaking, as `replay` prints it (default: the first)."
    ),
    runs: int = typer.Option(1, help="Replays of each candidate timeline."),
    need: int = typer.Option(1, help="How many of them must break the promise for the candidate to count."),
    max_trials: int = typer.Option(12, help="Stop after trying this many candidate timelines."),
    output: Path = typer.Option(
        None, help=f"Where to write the smaller scenario (default RUN_DIR/{SHRUNK})."
    ),
    out: Path = OUT,
    master: str = MASTER,
) -> None:
    """Find a smaller fault timeline (fewer faults, shorter faults, a shorter run) that still breaks
    the same promise in NEED of RUNS replays, and write it as a scenario YAML with its reproduction
    rate. Exit 0 when a smaller one was written, 1 when none was found, 130 on Ctrl-C (what was
    found so far is written)."""
    options.integer("--runs", runs, 1, MAX_RUNS)
    options.integer("--need", need, 1, runs)
    options.integer("--max-trials", max_trials, 1, MAX_RUNS)
    note_run_dir(run_dir)
    recorded = load_recorded_run(run_dir)
    target = _target(recorded, failure)
    options.output_dir("--out", out)
    destination = output if output is not None else run_dir / SHRUNK
    original = _timeline(recorded.scenario)
    _introduce(recorded)
    console.print(
        f"shrinking while it breaks {target} in {need} of {runs} replays, at most {max_trials} trials"
    )
    rate = [(0, 0)]  # of the candidate just tried
    kept: list[Timeline] = []

    def still_fails(candidate: Candidate) -> bool:
        line = candidate.timeline
        scenario = with_timeline(recorded.scenario, line.entries, line.duration_s)

        def once() -> bool:
            outcome = run_scenario(scenario, out, master=master, report=False, on_tick=run_ticker(console))
            if outcome.interrupted:
                raise KeyboardInterrupt
            return target in {b.key for b in _broke(outcome)}

        rate[0] = reproduces(runs, need, once)
        return rate[0][0] >= need

    def on_step(step: Step) -> None:
        failures, made = rate[0]
        verdict = Text("kept", style="green") if step.kept else Text("no", style="yellow")
        console.print(
            Text.assemble(
                f"\ntrial {step.trial}: {step.candidate.change}: broke it in {failures} of {made}: ",
                verdict,
                f" ({step.candidate.timeline.describe()})",
            ),
            soft_wrap=True,
        )
        if step.kept:
            kept.append(step.candidate.timeline)
            _write_shrunk(recorded, target, original, step.candidate.timeline, (failures, made), destination)

    interrupted = False
    try:
        shrink(original, still_fails, max_trials, on_step)
    except KeyboardInterrupt:
        interrupted = True
    if not kept:
        console.print("no smaller timeline broke it" + (" before the interrupt" if interrupted else ""))
        raise typer.Exit(130 if interrupted else 1)
    console.print(f"smallest: {kept[-1].describe()}, was {original.describe()}; written to {destination}")
    raise typer.Exit(130 if interrupted else 0)


def _write_shrunk(
    recorded: RecordedRun,
    target: str,
    original: Timeline,
    smaller: Timeline,
    rate: tuple[int, int],
    destination: Path,
) -> None:
    rate_text = f"broke {target} in {rate[0]} of {rate[1]} replays"
    base = recorded.scenario
    scenario = dataclasses.replace(
        with_timeline(base, smaller.entries, smaller.duration_s),
        description=f"{base.description} Shrunk by kchaos shrink from {recorded.root.name} "
        f"({original.describe()}) to {smaller.describe()}; {rate_text}.",
    )
    header = f"kchaos shrink of {recorded.root}: {rate_text}.\nRun it with: kchaos run {destination}"
    write_atomic(destination.parent, destination.name, scenario_yaml(scenario, header))


def register(app: typer.Typer) -> None:
    app.command()(replay)
    app.command("shrink")(shrink_run)
