"""`kchaos faults` (list faults) and `kchaos fault NAME` (run one against a running cluster)."""

from __future__ import annotations

import typer
from rich.console import Console

from faults.base import available

console = Console(highlight=False)


def list_faults() -> None:
    """List the faults with a one-line description each."""
    for name, description in available():
        console.print(f"{name:<16} {description}")


def register(app: typer.Typer) -> None:
    app.command("faults")(list_faults)
