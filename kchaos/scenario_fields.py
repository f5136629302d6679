"""Typed, strict access to the mappings of a scenario file: every mistake names its field path."""

from __future__ import annotations

import difflib
import math
import re
from typing import Any

from contract.errors import ConfigError
from contract.limits import brief, finite, whole

MAX_NAME = 100  # a scenario's name goes into its run directory's name
MAX_TEXT = 10_000


def fail(path: str, message: str) -> ConfigError:
    return ConfigError(f"{path}: {message}")


class Fields:
    """Typed access to one mapping of the scenario, rejecting unknown keys with a suggestion."""

    def __init__(self, data: Any, path: str, allowed: tuple[str, ...]) -> None:
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise fail(path or "scenario", f"expected a mapping, got {type(data).__name__}")
        for key in data:
            if key not in allowed:
                name = str(key)[:MAX_NAME]
                close = difflib.get_close_matches(name, allowed, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else f"; allowed: {', '.join(allowed)}"
                raise fail(self._join(path, name), f"unknown field{hint}")
        self.data, self.path = data, path

    @staticmethod
    def _join(path: str, key: str) -> str:
        return f"{path}.{key}" if path else key

    def get(self, key: str, kind: type | tuple[type, ...], default: Any) -> Any:
        value = self.data.get(key, default)
        if value is default:
            return default
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if isinstance(value, bool) and bool not in kinds:
            value = None  # YAML's yes/no must not pass as a number
        if not isinstance(value, kinds):
            names = " or ".join(k.__name__ for k in kinds)
            raise fail(self._join(self.path, key), f"expected {names}, got {brief(self.data.get(key))}")
        return value

    def text(
        self, key: str, default: Any, longest: int = MAX_TEXT, pattern: re.Pattern[str] | None = None
    ) -> Any:
        """A string field: at most `longest` characters, no control characters, matching `pattern`."""
        value = self.get(key, str, default)
        if value is default:
            return default
        where = self._join(self.path, key)
        if len(value) > longest:
            raise fail(where, f"longer than {longest} characters")
        if any(ord(c) < 32 or ord(c) == 127 for c in value):
            raise fail(where, f"control characters are not allowed, got {brief(value)}")
        if pattern is not None and not pattern.fullmatch(value):
            raise fail(where, f"expected {pattern.pattern}, got {brief(value)}")
        return value

    def number(self, key: str, default: float, minimum: float, maximum: float) -> float:
        if key not in self.data:
            return default
        return finite(self._join(self.path, key), self.data[key], minimum, maximum)

    def integer(self, key: str, default: int, minimum: int, maximum: int) -> int:
        if key not in self.data:
            return default
        return whole(self._join(self.path, key), self.data[key], minimum, maximum)

    def mapping(self, key: str) -> dict[str, Any]:
        """A mapping of settings or params: string keys, scalar values (numbers finite)."""
        items = dict(self.get(key, dict, {}))
        for name, value in items.items():
            where = self._join(self._join(self.path, key), str(name))
            if not isinstance(name, str):
                raise fail(where, f"keys must be strings, got {brief(name)}")
            if isinstance(value, float):
                finite(where, value, -math.inf, math.inf)
            elif not isinstance(value, str | int | bool):
                raise fail(where, f"expected a string, number or boolean, got {brief(value)}")
        return items
