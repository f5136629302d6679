"""The terminal output of every `kchaos` command: one kind of console, made here.

What we print is mostly data: paths, names, and messages that quote history files. So rich must
not turn `:100:` (as in `writes.jsonl:100:`) into an emoji, read `[...]` in a scenario's text as
markup, nor colour numbers and paths at random. Styles are given explicitly, as `rich.text.Text`.
"""

from __future__ import annotations

from rich.console import Console
from rich.text import Text


def make_console(*, stderr: bool = False) -> Console:
    return Console(stderr=stderr, highlight=False, markup=False, emoji=False)


def print_error(console: Console, message: str) -> None:
    """`error: message`: whole, on one line (for grep and copy), and literal (it may quote a history file)."""
    console.print(Text.assemble(("error:", "bold red"), " ", message), soft_wrap=True)
