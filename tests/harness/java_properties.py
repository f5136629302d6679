"""What java.util.Properties.load reads from a properties file (ISO-8859-1, escapes, continued
lines), ported for tests: it turns a rendered or read-back server.properties into the values Kafka
sees."""

from __future__ import annotations

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _logical_lines(text: str) -> list[str]:
    """Lines without comments and blank lines, a line ending in an odd number of backslashes joined
    with the next (whose leading whitespace is dropped)."""
    lines: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f") if pending else raw
        if not pending and (not line.strip(" \t\f") or line.lstrip(" \t\f")[:1] in ("#", "!")):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2:
            pending += line[:-1]
            continue
        lines.append(pending + line)
        pending = ""
    if pending:
        lines.append(pending)
    return lines


def _unescape(text: str) -> str:
    units: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u":
                units.append(chr(int(text[i + 2 : i + 6], 16)))
                i += 6
                continue
            units.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        units.append(char)
        i += 1
    # \\uXXXX are UTF-16 code units, as in Java: pairs of surrogates make one character.
    return "".join(units).encode("utf-16-le", "surrogatepass").decode("utf-16-le")


def read_properties(data: bytes) -> dict[str, str]:
    result: dict[str, str] = {}
    for line in _logical_lines(data.decode("iso-8859-1").lstrip(" \t\f")):
        line = line.lstrip(" \t\f")
        end = 0
        while end < len(line) and line[end] not in "=: \t\f":
            end += 2 if line[end] == "\\" else 1
        key = line[:end]
        rest = line[end:].lstrip(" \t\f")
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(" \t\f")
        result[_unescape(key)] = _unescape(rest)
    return result
