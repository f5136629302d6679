"""Say in words what is wrong with one history line that Spark flagged as not following the format."""

from __future__ import annotations

import json
from typing import Any

from checkers.frames import COUNTED_FROM_ZERO
from contract.events import READ_FIELDS, READ_PHASES, READ_TYPES, WRITE_FIELDS, WRITE_TYPES
from contract.limits import MAX_RUN_NS

_FIELDS = {field.name: field.type for field in (*WRITE_FIELDS, *READ_FIELDS)}
_INTEGER_BITS = {name: 32 if kind == "int" else 64 for name, kind in _FIELDS.items() if kind != "string"}
_STRING_FIELDS = tuple(name for name, kind in _FIELDS.items() if kind == "string")


def _typed_problem(event: dict[str, Any]) -> str | None:
    for name, bits in _INTEGER_BITS.items():
        field = event.get(name)
        if field is not None and (isinstance(field, bool) or not isinstance(field, int)):
            return f"field '{name}' must be an integer, got {json.dumps(field)[:60]}"
        if isinstance(field, int) and not -(2 ** (bits - 1)) <= field < 2 ** (bits - 1):
            return f"field '{name}' must be an integer of at most {bits} bits, got {field}"
    for name in COUNTED_FROM_ZERO:
        field = event.get(name)
        if isinstance(field, int) and field < 0:
            return f"field '{name}' must be 0 or more, got {field}"
    time_ns = event.get("time_ns")
    if isinstance(time_ns, int) and not 0 <= time_ns <= MAX_RUN_NS:
        return f"field 'time_ns' must be from 0 to {MAX_RUN_NS} (nanoseconds of the run), got {time_ns}"
    for name in _STRING_FIELDS:
        field = event.get(name)
        if field is not None and not isinstance(field, str):
            return f"field '{name}' must be a string, got {json.dumps(field)[:60]}"
    return None


def _one_of(event: dict[str, Any], name: str, allowed: tuple[str, ...]) -> str | None:
    if (field := event.get(name)) in allowed:
        return None
    return f"field '{name}' must be one of {', '.join(allowed)}, got {json.dumps(field)[:60]}"


def _missing(event: dict[str, Any], names: tuple[str, ...]) -> str | None:
    if nulls := [name for name in names if name in event and event[name] is None]:
        return f"field {', '.join(repr(n) for n in nulls)} must not be null"
    absent = [name for name in names if name not in event]
    return f"missing field {', '.join(repr(n) for n in absent)}" if absent else None


def _parse(text: str) -> tuple[dict[str, Any] | None, str | None]:
    try:
        event = json.loads(text)
    except json.JSONDecodeError as exc:
        at = "" if exc.msg.endswith(" at") else " at"  # "Unterminated string starting at"
        return None, f"malformed JSON ({exc.msg}{at} column {exc.colno})"
    except ValueError:  # Python reads no integer of more than 4300 digits
        return None, "malformed JSON (a number too long to read)"
    except RecursionError:
        return None, "malformed JSON (nested too deeply)"
    if not isinstance(event, dict):
        return None, "expected a JSON object"
    return event, None


def describe_write(text: str) -> str:
    """Why a writes.jsonl line is invalid."""
    event, problem = _parse(text)
    if event is None:
        return problem or "unreadable line"
    problem = _typed_problem(event) or _one_of(event, "type", WRITE_TYPES)
    problem = problem or _missing(event, ("time_ns", "process", "topic", "partition", "value"))
    return problem or "does not match the writes.jsonl schema"


def describe_read(text: str) -> str:
    """Why a reads.jsonl line is invalid."""
    event, problem = _parse(text)
    if event is None:
        return problem or "unreadable line"
    problem = (
        _typed_problem(event) or _one_of(event, "type", READ_TYPES) or _one_of(event, "phase", READ_PHASES)
    )
    required: tuple[str, ...] = ("time_ns", "process", "topic", "partition")
    if event.get("type") == "record":
        required += ("offset", "value")
    problem = problem or _missing(event, required)
    return problem or "does not match the reads.jsonl schema"
