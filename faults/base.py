"""The `Fault` protocol, the `FaultContext` faults act in, and the registry of faults by name.

A fault is one small class: `name` and `description` class attributes, a constructor taking its
validated params as keyword arguments, `start(context, rng)` that resolves targets from live state
and applies the fault, and an idempotent `heal(context)` that is safe after a partial start.
Scenarios and the CLI pick faults by name through `make_fault`.
"""

from __future__ import annotations

import inspect
import random
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

from contract.errors import ClusterError, ConfigError, FaultError
from contract.limits import brief, finite, whole
from harness.cluster import KafkaCluster
from harness.retrying import bounded, kinds
from harness.workload import WorkloadHandles


@dataclass(frozen=True)
class FaultContext:
    """What a fault acts in, as Jepsen's test map is for its nemeses: the live cluster, and the
    handles of the workload running against it (none for `kchaos fault` and `kchaos heal` on a
    cluster alone)."""

    cluster: KafkaCluster
    workload: WorkloadHandles = field(default_factory=WorkloadHandles)


@runtime_checkable
class Fault(Protocol):
    """What the nemesis and the CLI need from a fault."""

    name: ClassVar[str]
    description: ClassVar[str]
    targets: list[str]
    """Resolved node names (e.g. `kafka-2`), filled in by `start`."""
    detail: dict[str, Any]
    """What else was chosen at start (topic/partition, shape, rate), recorded in faults.jsonl."""
    healed: dict[str, Any]
    """What the heal found (a disk fault's `disks`), recorded in its stop's detail; empty for most."""

    def start(self, context: FaultContext, rng: random.Random) -> None: ...

    def heal(self, context: FaultContext) -> None: ...

    def describe(self) -> str:
        """What this fault does and why it matters, in plain words: recorded with its start in
        faults.jsonl, where reports read it."""
        ...


FaultClass = TypeVar("FaultClass", bound=type[Any])
T = TypeVar("T")

HEAL_STEP_ATTEMPTS = 3
HEAL_STEP_WITHIN_S = 30.0


def retry_heal_step(step: Callable[..., T], *args: Any) -> T:
    """`step(*args)`, an idempotent part of a heal, tried again when it fails (a container busy, an
    exec that timed out): 3 attempts within 30 s, then its last error."""
    retrying = bounded(
        kinds(FaultError, ClusterError), attempts=HEAL_STEP_ATTEMPTS, within_s=HEAL_STEP_WITHIN_S, wait_s=1.0
    )
    return retrying(step, *args)


_REGISTRY: dict[str, type[Any]] = {}


def register(cls: FaultClass) -> FaultClass:
    """Class decorator: make a fault available by its `name`."""
    name = cls.name
    if name in _REGISTRY and _REGISTRY[name] is not cls:
        raise ValueError(f"fault name {name!r} registered twice")
    _REGISTRY[name] = cls
    return cls


def _params_of(cls: type[Any]) -> dict[str, inspect.Parameter]:
    signature = inspect.signature(cls.__init__)
    return {n: p for n, p in signature.parameters.items() if n != "self" and p.kind is p.KEYWORD_ONLY}


def params_help(name: str) -> dict[str, str]:
    """Param name -> its default as text ('required' when there is none), for `kchaos faults`."""
    cls = fault_class(name)
    shown: dict[str, str] = {}
    for n, p in _params_of(cls).items():
        if p.default is inspect.Parameter.empty:
            shown[n] = "required"
        elif n == "target" and p.default is None:  # the fault's own default target, not "None"
            shown[n] = str(getattr(cls, "default_target", None))
        else:
            shown[n] = str(p.default)
    return shown


def fault_class(name: str) -> type[Any]:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ConfigError(f"unknown fault {name!r}; known faults: {', '.join(sorted(_REGISTRY))}") from None


def make_fault(name: str, params: Mapping[str, Any] | None = None) -> Fault:
    """Build a fault by name; unknown or badly typed params raise ConfigError listing valid ones."""
    cls = fault_class(name)
    accepted = _params_of(cls)
    given = dict(params or {})
    valid = ", ".join(accepted) or "none"
    for key in given:
        if key not in accepted:
            raise ConfigError(f"fault {name!r} has no param {key!r}; valid params: {valid}")
    for key, param in accepted.items():
        if param.default is inspect.Parameter.empty and key not in given:
            raise ConfigError(f"fault {name!r} needs param {key!r}; valid params: {valid}")
    try:
        fault: Fault = cls(**given)
    except (TypeError, ValueError, ConfigError) as exc:
        raise ConfigError(f"fault {name!r}: {exc}; valid params: {valid}") from None
    return fault


def available() -> list[tuple[str, str]]:
    """(name, one-line description) of every registered fault, sorted by name."""
    return sorted((name, cls.description) for name, cls in _REGISTRY.items())


def coerce_float(name: str, value: object, *, low: float, high: float) -> float:
    """A numeric param from config or the CLI (where it arrives as text), finite and range-checked."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise ConfigError(f"param {name!r}: expected a number, got {brief(value)}") from None
    return finite(f"param {name!r}", value, low, high)


def coerce_int(name: str, value: object, *, low: int, high: int) -> int:
    """An integer param from config or the CLI (where it arrives as text), range-checked."""
    if isinstance(value, str) and re.fullmatch(r"\s*-?[0-9]{1,19}\s*", value):
        value = int(value)
    return whole(f"param {name!r}", value, low, high)


def coerce_bool(name: str, value: object) -> bool:
    """A yes/no param: a boolean, or true/false, yes/no, 1/0 as text (the CLI gives text)."""
    words = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in words:
        return words[value.strip().lower()]
    raise ConfigError(f"param {name!r}: expected true or false, got {brief(value)}")


def text_param(name: str, value: object, longest: int = 255) -> str:
    """A text param (a target, a topic): a string of printable characters, at most `longest` long."""
    if not isinstance(value, str):
        raise ConfigError(f"param {name!r}: expected text, got {brief(value)}")
    if len(value) > longest or any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise ConfigError(
            f"param {name!r}: expected at most {longest} printable characters, got {brief(value)}"
        )
    return value
