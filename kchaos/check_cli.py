"""`kchaos check RUN_DIR...`: judge runs, write check/result.json, print a short summary."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from checkers.check import check_run
from checkers.class_archive import build
from contract.anomaly_kinds import ANOMALY_COUNTS, counts_of_run
from contract.errors import EnvironmentError_, HarnessError, SparkError
from contract.history import RESULT
from contract.history_fields import Fields
from contract.history_scan import judged_files
from kchaos.console import make_console, print_error
from kchaos.crash import note_run_dir
from kchaos.group_lines import acks_after_heals, every_guarantee, group_lines

_err_console = make_console(stderr=True)


def _summary(result: dict[str, Any], run_dir: Path) -> str:
    lines = [
        f"run {result['run_id']}: {'VALID' if result['valid'] else 'INVALID'}"
        f"{'' if result['complete'] else ' (incomplete final read)'}"
        f" - {result['events']['writes']} write events, {result['events']['reads']} read events"
        f" checked in {result['spark']['seconds']} s"
    ]
    for mode, counts in result["acks"].items():
        if counts["attempted"]:
            lines.append(
                f"  acks={mode}: {counts['acked']}/{counts['attempted']} acked, {counts['failed']} failed, "
                f"{counts['indeterminate']} indeterminate; "
                + ", ".join(f"{name} {counts[name]}" for name in counts_of_run(ANOMALY_COUNTS, result))
                + acks_after_heals(counts)
            )
    recorded = judged_files(Fields(result.get("history_files") or {}, run_dir / RESULT))
    lines.extend(f"  {judged}" for file in recorded if (judged := file.judged_prefix()) is not None)
    for error in result["errors"]:
        lines.append(f"  CHECKER FAILED: {error['kind']}: {error['error']}")
    if result["unexpected"]:
        lines.append(f"  unexpected values: {result['unexpected']}")
    lines.extend(f"  {line}" for line in group_lines(result))
    for whose, g in every_guarantee(result):
        if g["promised"] and g["verdict"] != "held":
            lines.append(f"  {g['verdict'].upper()}: {whose} {g['id']} ({g['reason']})")
    lines.append(f"  result: {run_dir / RESULT}")
    return "\n".join(lines)


def check(
    run_dirs: list[Path] = typer.Argument(
        ..., help="Run directories (HISTORY_FORMAT.md format 1), checked in turn on one Spark session."
    ),
    master: str | None = typer.Option(
        None,
        "--master",
        help="Spark master URL (default local[*]); the run directories must be readable there.",
    ),
    prefix: bool = typer.Option(
        False,
        "--prefix",
        help="Judge a history file whose end is torn (a run cut short by a crash or power loss: a "
        "last line without its newline, or NUL bytes) up to its last whole line, instead of refusing "
        "it; result.json and the report say how many lines of each file were judged.",
    ),
    as_json: bool = typer.Option(
        False,
        "--json",
        help="Print the whole result.json instead of a summary; with several run directories, one "
        "result per line (JSON Lines), in their order.",
    ),
) -> None:
    """Check runs' histories on Spark: anomalies, guarantees, availability. Exit 1 if a guarantee failed.

    With several run directories, each is checked even when another one is unusable (its error is
    printed and the others go on); the exit code is the worst of theirs."""
    worst = 0
    for run_dir in run_dirs:
        try:
            worst = max(worst, _check_one(run_dir, master, prefix, as_json, one_line=len(run_dirs) > 1))
        except EnvironmentError_:
            raise  # Spark cannot start: nothing else can be checked either
        except HarnessError as exc:
            if len(run_dirs) == 1:
                raise
            print_error(_err_console, str(exc))
            worst = max(worst, exc.exit_code)
    note_run_dir(None)
    if worst:
        raise typer.Exit(worst)


def _check_one(run_dir: Path, master: str | None, prefix: bool, as_json: bool, one_line: bool) -> int:
    note_run_dir(run_dir)
    result = check_run(run_dir, master, prefix=prefix)
    typer.echo(json.dumps(result, indent=None if one_line else 2) if as_json else _summary(result, run_dir))
    if result["errors"]:  # could not judge every guarantee: not a verdict
        kinds = ", ".join(error["kind"] for error in result["errors"])
        raise SparkError(f"could not judge everything; checkers failed: {kinds} (see {run_dir / RESULT})")
    return 0 if result["valid"] else 1


def spark_archive(
    rebuild: bool = typer.Option(False, "--rebuild", help="Build it again even if it exists."),
) -> None:
    """Build the class archive that lets every later check's JVM start warm (once per Java and Spark)."""
    path, built = build(rebuild)
    typer.echo(f"{'built' if built else 'present'}: {path}")


def register(app: typer.Typer) -> None:
    app.command("check")(check)
    app.command("spark-archive")(spark_archive)
