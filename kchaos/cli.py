"""The `kchaos` command line.

Each area registers its own commands (`register(app)` in `kchaos/*_cli.py`), so this module only
assembles them and turns every way a command can end into an exit code a CI job can act on:

    0    every promised guarantee (and expectation) held
    1    a promise broke: a guarantee or expectation did not hold (the only verdict of failure)
    2    no verdict: bad input (one line names the file, line, field, option or variable), or the
         experiment could not run (Docker, Spark, the cluster), or its output could not be written
    3    no verdict: a bug in kafka-chaos (one line names the log holding the traceback)
    130  interrupted (Ctrl-C or SIGTERM)

A crash never exits 1: whatever the input, an unexpected exception is ours to fix, not Kafka's.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Sequence
from typing import Any

import typer
from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError
from typer.core import TyperGroup

from contract.errors import HarnessError
from kchaos.console import guarded_stdout, make_console, print_error
from kchaos.crash import log_crash, note_run_dir
from kchaos.signals import terminate_as_interrupt


class _Commands(TyperGroup):
    """Typer's command group, except that an EOFError raised by a command stays an error: typer
    would print "Aborted!" and exit 1, the code of a broken promise."""

    def invoke(self, ctx: Any) -> Any:  # a click Context, which typer does not export
        try:
            return super().invoke(ctx)
        except EOFError as exc:
            raise RuntimeError(f"EOFError: {exc}") from exc


err_console = make_console(stderr=True)

COMMAND_MODULES = {
    "doctor": "env_cli",
    "cleanup": "env_cli",
    "images": "env_cli",
    "cluster": "cluster_cli",
    "workload": "workload_cli",
    "faults": "fault_cli",
    "fault": "fault_cli",
    "heal": "fault_cli",
    "check": "check_cli",
    "spark-archive": "check_cli",
    "report": "report_cli",
    "run": "run_cli",
    "scenarios": "run_cli",
    "replay": "replay_cli",
    "shrink": "replay_cli",
    "findings": "findings_cli",
}
"""Each command, by the module (kchaos/NAME.py) that registers it, in the order of `kchaos --help`."""


def _no_options() -> None:
    """kchaos has options per command only."""


def build_app(command: str | None = None) -> typer.Typer:
    """The `kchaos` app with the commands of `command`'s module only, or with all of them (help, a
    mistyped command): a command does not wait for the imports of the others (Docker's, Spark's,
    the report's: `kchaos check` started 0.4 s sooner)."""
    app = typer.Typer(
        name="kchaos",
        cls=_Commands,
        help="Chaos testing for real Apache Kafka clusters.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    app.callback()(_no_options)  # a group even with one command, which typer would otherwise make the app
    owner = COMMAND_MODULES.get(command or "")
    for module in dict.fromkeys(COMMAND_MODULES.values()) if owner is None else (owner,):
        importlib.import_module(f"kchaos.{module}").register(app)
    for info in app.registered_commands:
        info.short_help = info.short_help or _summary(info.callback)
    return app


def _summary(callback: Any) -> str | None:
    """A command's first docstring paragraph as one line: typer's command list would keep the
    docstring's own line breaks, breaking a sentence mid-line in `kchaos --help`."""
    paragraphs = inspect.cleandoc(getattr(callback, "__doc__", None) or "").split("\n\n")
    return " ".join(paragraphs[0].split()) or None


INTERNAL_ERROR = 3


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code (also the console-script entry point)."""
    args = list(argv) if argv is not None else sys.argv[1:]
    note_run_dir(None)
    try:
        # Not standalone: usage errors come here, to be said on one line like every other error.
        app = build_app(args[0] if args else None)
        # SIGTERM as Ctrl-C for every command: `with` blocks clean up, and the exit code is 130.
        with terminate_as_interrupt(), guarded_stdout():
            code = app(args=args, prog_name="kchaos", standalone_mode=False)
        if code == 130:  # typer turns Ctrl-C into exit 130 without a word
            err_console.print("interrupted")
        return code if isinstance(code, int) else 0
    except NoArgsIsHelpError as exc:
        exc.show()  # `kchaos` alone: the help
        return 2
    except UsageError as exc:
        command = exc.ctx.command_path if exc.ctx is not None else "kchaos"
        _print_error(f"{exc.format_message()} (see `{command} --help`)")
        return 2
    except ClickException as exc:
        _print_error(exc.format_message())
        return 2
    except typer.Abort:
        err_console.print("interrupted")
        return 130
    except SystemExit as exc:
        code = exc.code
        if code == 1 and isinstance(exc.__context__, BrokenPipeError):  # typer's exit for a closed stdout
            _print_error("output closed before it was all written (broken pipe)")
            return 2
        return code if isinstance(code, int) else (0 if code is None else 2)
    except HarnessError as exc:
        _print_error(str(exc))
        return exc.exit_code
    except KeyboardInterrupt:
        err_console.print("interrupted")
        return 130
    except Exception as exc:  # anything else is a bug of ours, whatever the input was
        log = log_crash(exc, args)
        where = f"traceback in {log}" if log is not None else "traceback above"
        reason = (str(exc).strip().splitlines() or [""])[0][:200]
        _print_error(
            f"internal error (a kafka-chaos bug, please report it): {type(exc).__name__}"
            f"{': ' + reason if reason else ''}; {where}"
        )
        return INTERNAL_ERROR
    return 0


def _print_error(message: str) -> None:
    print_error(err_console, message)


if __name__ == "__main__":
    sys.exit(main())
