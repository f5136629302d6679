"""`kchaos report`: render a run's report, or the index page over a directory of runs."""

from __future__ import annotations

from pathlib import Path

import typer

from kchaos.crash import note_run_dir
from reports.index import write_index
from reports.write import write_report


def report(
    path: Path = typer.Argument(..., help="A checked run directory, or with --index a directory of runs."),
    index: bool = typer.Option(
        False, "--index", help="Write PATH/index.html over every run in PATH, with trends per scenario."
    ),
) -> None:
    """Write RUN_DIR/report/index.html (+ junit.xml, summary.json), or with --index an index of runs."""
    note_run_dir(None if index else path)
    target = write_index(path) if index else write_report(path)
    typer.echo(str(target))


def register(app: typer.Typer) -> None:
    app.command("report")(report)
