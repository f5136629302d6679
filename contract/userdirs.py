"""The user's own directories kafka-chaos keeps files in."""

from __future__ import annotations

import os
from pathlib import Path


def user_cache_dir() -> Path:
    """`$XDG_CACHE_HOME/kchaos`, or `~/.cache/kchaos` (the XDG spec ignores an empty or relative value)."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache") / "kchaos"
