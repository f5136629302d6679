"""The `kchaos` command line.

Each area registers its own commands (`register(app)` in `harness/app/*_cli.py`), so this module only
assembles them and turns our errors into one clear line and an exit code: 0 fine, 1 a guarantee
or expectation failed, 2 bad input or the experiment could not run, 130 interrupted.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import typer
from rich.text import Text

from harness.app import (
    check_cli,
    cluster_cli,
    env_cli,
    fault_cli,
    report_cli,
    run_cli,
    workload_cli,
)
from harness.app.console import make_console
from harness.errors import HarnessError

app = typer.Typer(
    name="kchaos",
    help="Chaos testing for real Apache Kafka clusters.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
err_console = make_console(stderr=True)


for _module in (env_cli, cluster_cli, workload_cli, fault_cli, check_cli, report_cli, run_cli):
    _module.register(app)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code (also the console-script entry point)."""
    try:
        # Standalone mode: typer reports usage errors itself (exit 2) and exits via SystemExit.
        app(args=list(argv) if argv is not None else None, prog_name="kchaos")
    except SystemExit as exc:
        code = exc.code
        if code == 130:  # typer turns Ctrl-C into exit 130 without a word
            err_console.print("interrupted")
        return code if isinstance(code, int) else (0 if code is None else 2)
    except HarnessError as exc:
        # Whole, on one line (for grep and copy), and literal: the message may quote a history file.
        err_console.print(Text.assemble(("error:", "bold red"), " ", str(exc)), soft_wrap=True)
        return exc.exit_code
    except KeyboardInterrupt:
        err_console.print("interrupted")
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
