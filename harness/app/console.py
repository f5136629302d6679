"""The terminal output of every `kchaos` command: one kind of console, made here.

What we print is mostly data: paths, names, and messages that quote history files. So rich must
not turn `:100:` (as in `writes.jsonl:100:`) into an emoji, read `[...]` in a scenario's text as
markup, nor colour numbers and paths at random. Styles are given explicitly, as `rich.text.Text`.
"""

from __future__ import annotations

from rich.console import Console


def make_console(*, stderr: bool = False) -> Console:
    return Console(stderr=stderr, highlight=False, markup=False, emoji=False)
