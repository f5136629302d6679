"""Reading a YAML file that someone may have broken, by accident or on purpose.

One ConfigError naming the file (and the line, where YAML knows it) for whatever would otherwise
escape: bytes that are not UTF-8, PyYAML's own ValueErrors (`2024-13-01`, `!!int x`), nesting deep
enough to exhaust the recursion limit, and aliases that expand into millions of values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from contract.errors import ConfigError

MAX_FILE_BYTES = 1024 * 1024
MAX_VALUES = 100_000
"""Values in a document once YAML aliases are expanded: far above any real one, far below trouble."""


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, except that a key given twice in one mapping is an error: PyYAML keeps
    the last silently, so `duration_s: 10` then `duration_s: 600` would run for ten minutes."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: list[Any] = []
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *base` may be overridden, as YAML says
                continue
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} given twice in one mapping", key_node.start_mark
                )
            seen.append(key)
        return super().construct_mapping(node, deep=deep)


def read_yaml(path: Path) -> Any:
    """The document of a YAML file: UTF-8, at most MAX_FILE_BYTES, MAX_VALUES values once expanded."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror})") from None
    if len(raw) > MAX_FILE_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_FILE_BYTES // 1024} KiB")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        at = raw.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"{path}:{at}: not UTF-8 (byte {raw[exc.start]:#04x})") from None
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line: int | None = mark.line + 1 if mark is not None else None
        if isinstance(exc, yaml.reader.ReaderError):  # a character YAML does not allow
            line = text.count("\n", 0, exc.position) + 1
        where = f":{line}" if line is not None else ""
        problem = getattr(exc, "reason", None) or getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{path}{where}: not valid YAML ({' '.join(str(problem).split())})") from None
    except (ValueError, TypeError, AttributeError, OverflowError) as exc:
        # PyYAML's constructors let these out for values such as `2024-13-01` or `!!int x`.
        raise ConfigError(f"{path}: not valid YAML ({str(exc)[:200]})") from None
    except RecursionError:
        raise ConfigError(f"{path}: nested too deeply") from None
    if _expanded_size(data) > MAX_VALUES:
        raise ConfigError(f"{path}: more than {MAX_VALUES} values once its aliases are expanded")
    return data


def _expanded_size(data: Any) -> int:
    """How many values `data` holds, counting a value reached twice (a YAML alias) twice; stops
    counting past MAX_VALUES, so a billion-laughs document costs no more than a large real one."""
    count, stack = 0, [data]
    while stack and count <= MAX_VALUES:
        value = stack.pop()
        count += 1
        if isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return count
