"""The terminal output of every `kchaos` command: one kind of console, made here.

What we print is mostly data: paths, names, and messages that quote history files. So rich must
not turn `:100:` (as in `writes.jsonl:100:`) into an emoji, read `[...]` in a scenario's text as
markup, nor colour numbers and paths at random. Styles are given explicitly, as `rich.text.Text`.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import IO, Any, TextIO

from rich.console import Console
from rich.text import Text

from contract.errors import OutputError


class _Console(Console):
    """rich's Console, except that a stderr closed early (`kchaos ... 2>&1 | head -1`) is not rich's
    SystemExit(1), the code of a broken promise: the exit code says it. Standard output never gets
    here: `_GuardedStdout` has made its failed write an OutputError (exit 2) already."""

    def on_broken_pipe(self) -> None:
        _discard(self.file)


def _discard(stream: IO[str]) -> None:
    """Point `stream`'s file descriptor at /dev/null: later writes, and the interpreter's flush as it
    exits, cannot fail again over what could not be written."""
    with suppress(OSError, ValueError):  # no descriptor (a test's captured stream)
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())


def make_console(*, stderr: bool = False) -> Console:
    return _Console(stderr=stderr, highlight=False, markup=False, emoji=False)


def print_error(console: Console, message: str) -> None:
    """`error: message`: whole, on one line (for grep and copy), and literal (it may quote a history file).
    A stderr that cannot take it (closed with stdout, as in `kchaos ... 2>&1 | head -1`) leaves the
    exit code to say it."""
    with suppress(OSError):
        console.print(Text.assemble(("error:", "bold red"), " ", message), soft_wrap=True)


class _GuardedStdout:
    """Standard output whose failed writes are an OutputError (exit 2), not an OSError that would
    read as a bug of ours (exit 3) or, through click, as a broken promise (exit 1)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as exc:
            raise self._unwritable(exc) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            raise self._unwritable(exc) from None

    def _unwritable(self, exc: OSError) -> OutputError:
        _discard(self._stream)
        if exc.errno == errno.EPIPE:
            return OutputError("output closed before it was all written (broken pipe)")
        return OutputError(f"cannot write the output: {exc.strerror or exc}")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def guarded_stdout() -> Iterator[None]:
    """Run a command with its standard output guarded (see `_GuardedStdout`); a closed one is an
    OutputError at once: nothing the command says could be read."""
    original = sys.stdout
    if original is None:  # Python's stdout when the process started without file descriptor 1
        raise OutputError("standard output is closed: nothing this command prints could be read")
    sys.stdout = _GuardedStdout(original)
    try:
        yield
    finally:
        sys.stdout = original
