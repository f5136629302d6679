"""What the tests of links in run directories share: the refusal's words and the file outside."""

from __future__ import annotations

from pathlib import Path

LINK_REFUSED = "is a symbolic link; kafka-chaos never writes through a link in a run directory (remove it)"
PRECIOUS = {"index.html": "precious", "result.json": "precious"}


def make_outside(tmp_path: Path) -> Path:
    """A directory outside the run directory, with files (`PRECIOUS`) that must survive."""
    directory = tmp_path / "outside"
    directory.mkdir()
    for name, text in PRECIOUS.items():
        (directory / name).write_text(text)
    return directory


def snapshot(directory: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(directory.iterdir())}


def untouched(outside: Path) -> bool:
    return snapshot(outside) == PRECIOUS
