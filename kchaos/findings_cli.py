"""`kchaos findings bundle | check | tables`: the findings' evidence in the repository
(docs/findings/<id>/, `kchaos.finding_bundles`) and the tables made of it (`kchaos.finding_tables`)."""

from __future__ import annotations

from pathlib import Path

import typer

from contract.errors import ConfigError
from kchaos.console import make_console
from kchaos.finding_bundles import bundle_runs, load_bundle, load_bundles
from kchaos.finding_tables import (
    check_documents,
    matrix_table,
    readme_table,
    summary_table,
    write_documents,
)

console = make_console()
findings_app = typer.Typer(
    help="Evidence bundles of the findings (docs/findings/<id>/) and the tables made of them.",
    no_args_is_help=True,
)
ROOT_HELP = "The directory of bundles."
FINDINGS_HELP = "The findings document, whose generated blocks are checked or written."
README_HELP = "The README, whose findings table is checked or written."


@findings_app.command()
def bundle(
    runs: list[Path] = typer.Argument(..., help="Checked run directories."),
    finding_id: str = typer.Option(..., "--id", help="The finding's bundle, ROOT/ID, with its finding.yaml."),
    quote: list[str] = typer.Option(
        [],
        "--quote",
        help="A log line the text quotes, FILE:LINE or FILE:FIRST-LAST, FILE in a run (repeatable).",
    ),
    root: Path = typer.Option(Path("docs/findings"), help=ROOT_HELP),
    findings: Path = typer.Option(Path("docs/FINDINGS.md"), help=FINDINGS_HELP),
    readme: Path = typer.Option(Path("README.md"), help=README_HELP),
) -> None:
    """Copy checked runs into a finding's bundle, then remake every table.

    Each run's run.json, scenario.yaml and result.json (without its examples) go to
    ROOT/ID/runs/RUN_ID/, the quoted lines to ROOT/ID/quotes.jsonl; then counts.md, FINDINGS.md's
    and README.md's tables are made again from every bundle."""
    path = root / finding_id
    ids = bundle_runs(runs, path, quote)
    load_bundle(path)  # what was written reads back under the current contract
    written = write_documents(load_bundles(root), findings, readme)
    console.print(f"{path}: bundled {', '.join(ids)}")
    for file in written:
        console.print(f"rewrote {file}")


@findings_app.command()
def check(
    root: Path = typer.Option(Path("docs/findings"), help=ROOT_HELP),
    findings: Path = typer.Option(Path("docs/FINDINGS.md"), help=FINDINGS_HELP),
    readme: Path = typer.Option(Path("README.md"), help=README_HELP),
) -> None:
    """Check the bundles against the contract and the documents against the bundles.

    Every bundled run must read as a run directory of the current contract; FINDINGS.md's and
    README.md's generated blocks and each bundle's counts.md must be what the bundles make. Exit 2
    naming each disagreement."""
    bundles = load_bundles(root)
    problems = check_documents(bundles, findings, readme)
    if problems:
        for problem in problems[:-1]:
            console.print(problem, markup=False, highlight=False)
        raise ConfigError(problems[-1] + (f" ({len(problems)} problems)" if len(problems) > 1 else ""))
    runs = sum(len(b.runs) for b in bundles)
    console.print(
        f"{len(bundles)} findings, {runs} runs: the bundles read, and the documents agree with them"
    )


@findings_app.command()
def tables(
    write: bool = typer.Option(False, "--write", help="Rewrite the generated blocks and counts.md files."),
    root: Path = typer.Option(Path("docs/findings"), help=ROOT_HELP),
    findings: Path = typer.Option(Path("docs/FINDINGS.md"), help=FINDINGS_HELP),
    readme: Path = typer.Option(Path("README.md"), help=README_HELP),
) -> None:
    """Print the tables made from the bundles, or with --write put them in place.

    The tables: FINDINGS.md's summary and release matrix, each finding's runs, README.md's short
    table, and each bundle's counts.md."""
    bundles = load_bundles(root)
    if write:
        for file in write_documents(bundles, findings, readme):
            console.print(f"rewrote {file}")
        return
    for title, table in (
        ("summary", summary_table(bundles)),
        ("release matrix", matrix_table(bundles)),
        ("README", readme_table(bundles)),
    ):
        typer.echo(f"{title}:\n{table}")  # as it is: a console would wrap the table's lines


def register(app: typer.Typer) -> None:
    app.add_typer(findings_app, name="findings")
