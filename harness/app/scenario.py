"""Scenario files: a whole experiment (cluster, workload, faults, expectations) in YAML.

Validation is strict and names the field path of every mistake (`faults.schedule[1].params.shape`),
because a typo in a chaos experiment otherwise silently tests something else. Built-in scenarios
live in `harness/app/scenarios/*.yaml`; see README "Scenario format".
"""

from __future__ import annotations

import difflib
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from faults import make_fault
from harness.anomaly_kinds import COUNT_KEYS
from harness.cluster import ClusterSpec
from harness.errors import ConfigError
from harness.experiment import ExperimentSpec
from harness.history import ACKS_MODES
from harness.workload import WorkloadSpec

BUILTIN_DIR = Path(__file__).resolve().parent / "scenarios"
_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<=": operator.le,
    ">=": operator.ge,
    "<": operator.lt,
    ">": operator.gt,
}
_EXPECTATION = re.compile(
    r"^\s*(?:acks=(?P<acks>0|1|all)\s+)?(?P<metric>[a-z]+)\s*(?P<op>==|!=|<=|>=|<|>)\s*"
    r"(?P<value>\d+|true|false)\s*$"
)


@dataclass(frozen=True)
class Expectation:
    text: str
    acks: str | None
    metric: str
    op: str
    value: int | bool

    def evaluate(self, result: Mapping[str, Any]) -> tuple[bool, Any]:
        """(holds, observed value) against a check/result.json."""
        if self.acks is not None:
            observed = result.get("acks", {}).get(self.acks, {}).get(self.metric)
        else:
            observed = result.get(self.metric)
        if observed is None:
            return False, None
        return _OPERATORS[self.op](observed, self.value), observed


@dataclass(frozen=True)
class FaultPlan:
    """What the nemesis does: explicit `schedule` entries, or a seeded generated timeline."""

    mode: str = "none"  # none | sequence | mix | schedule
    faults: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    schedule: list[dict[str, Any]] = field(default_factory=list)  # {at_s, duration_s, fault, params}
    interval_s: float = 10.0  # mean quiet gap before each generated fault (jittered by the seed)
    fault_duration_s: float = 10.0


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    source: str
    experiment: ExperimentSpec
    faults: FaultPlan
    expectations: list[Expectation]


def _fail(path: str, message: str) -> ConfigError:
    return ConfigError(f"{path}: {message}")


class _Fields:
    """Typed access to one mapping of the scenario, rejecting unknown keys with a suggestion."""

    def __init__(self, data: Any, path: str, allowed: tuple[str, ...]) -> None:
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise _fail(path or "scenario", f"expected a mapping, got {type(data).__name__}")
        for key in data:
            if key not in allowed:
                close = difflib.get_close_matches(str(key), allowed, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else f"; allowed: {', '.join(allowed)}"
                raise _fail(self._join(path, str(key)), f"unknown field{hint}")
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
            raise _fail(self._join(self.path, key), f"expected {names}, got {self.data.get(key)!r}")
        return value

    def number(self, key: str, default: float, minimum: float = 0.0) -> float:
        value = float(self.get(key, (int, float), default))
        if value < minimum:
            raise _fail(self._join(self.path, key), f"must be at least {minimum:g}, got {value:g}")
        return value

    def mapping(self, key: str) -> dict[str, Any]:
        return dict(self.get(key, dict, {}))


def _acks_list(value: Any, path: str) -> tuple[str, ...]:
    items = [str(v) for v in value] if isinstance(value, list) else None
    if not items or any(v not in ACKS_MODES for v in items):
        raise _fail(path, f"expected a non-empty list of {', '.join(ACKS_MODES)}, got {value!r}")
    return tuple(items)


def _fault_plan(data: Any) -> FaultPlan:
    f = _Fields(data, "faults", ("mode", "faults", "schedule", "interval_s", "fault_duration_s"))
    entries: list[tuple[str, dict[str, Any]]] = []
    for i, item in enumerate(f.get("faults", list, [])):
        entry = _Fields(item, f"faults.faults[{i}]", ("name", "params"))
        name, params = entry.get("name", str, None), entry.mapping("params")
        if name is None:
            raise _fail(f"faults.faults[{i}].name", "required")
        _checked(make_fault, f"faults.faults[{i}]", name, params)
        entries.append((name, params))
    schedule: list[dict[str, Any]] = []
    for i, item in enumerate(f.get("schedule", list, [])):
        entry = _Fields(item, f"faults.schedule[{i}]", ("at_s", "duration_s", "fault", "params"))
        name, params = entry.get("fault", str, None), entry.mapping("params")
        if name is None:
            raise _fail(f"faults.schedule[{i}].fault", "required")
        _checked(make_fault, f"faults.schedule[{i}]", name, params)
        schedule.append(
            {
                "at_s": entry.number("at_s", 0.0),
                "duration_s": entry.number("duration_s", 10.0, 0.1),
                "fault": name,
                "params": params,
            }
        )
    default_mode = "schedule" if schedule else ("sequence" if entries else "none")
    mode = f.get("mode", str, default_mode)
    if mode not in ("none", "sequence", "mix", "schedule"):
        raise _fail("faults.mode", f"expected none, sequence, mix or schedule, got {mode!r}")
    if mode in ("sequence", "mix") and not entries:
        raise _fail("faults.faults", f"mode {mode!r} needs at least one fault")
    return FaultPlan(
        mode, entries, schedule, f.number("interval_s", 10.0, 0.1), f.number("fault_duration_s", 10.0, 0.1)
    )


def _checked(build: Callable[..., Any], path: str, *args: Any) -> None:
    try:
        build(*args)
    except ConfigError as exc:
        raise _fail(path, str(exc)) from None


def parse_scenario(data: Any, source: str) -> Scenario:
    top = _Fields(
        data, "", ("name", "description", "duration_s", "seed", "cluster", "workload", "faults", "expect")
    )
    name = top.get("name", str, None) or Path(source).stem
    c = _Fields(
        top.data.get("cluster"),
        "cluster",
        ("brokers", "zookeepers", "broker_config", "image", "kafka", "base_image", "heap"),
    )
    kafka = c.get("kafka", str, None)
    cluster = _checked_value(
        lambda: ClusterSpec(
            brokers=int(c.number("brokers", 3, 1)),
            zookeepers=int(c.number("zookeepers", 1, 1)),
            broker_config=c.mapping("broker_config"),
            image=c.get("image", str, None),
            kafka_dist=Path(kafka) if kafka else None,
            heap=c.get("heap", str, "256m"),
            **({"base_image": c.get("base_image", str, None)} if "base_image" in c.data else {}),
        ),
        "cluster",
    )
    w = _Fields(
        top.data.get("workload"),
        "workload",
        (
            "acks",
            "producers_per_mode",
            "partitions",
            "replication_factor",
            "rate_per_s",
            "message_size",
            "producer_config",
            "topic_config",
            "live_consumers",
        ),
    )
    workload = _checked_value(
        lambda: WorkloadSpec(
            acks=_acks_list(w.data["acks"], "workload.acks") if "acks" in w.data else ACKS_MODES,
            producers_per_mode=int(w.number("producers_per_mode", 1, 1)),
            partitions=int(w.number("partitions", 3, 1)),
            replication_factor=int(w.number("replication_factor", min(3, cluster.brokers), 1)),
            rate_per_s=w.number("rate_per_s", 200.0),
            message_size=int(w.number("message_size", 0)),
            producer_config=w.mapping("producer_config"),
            topic_config=w.mapping("topic_config"),
            live_consumers=int(w.number("live_consumers", 1)),
        ),
        "workload",
    )
    if workload.replication_factor > cluster.brokers:
        raise _fail(
            "workload.replication_factor",
            f"{workload.replication_factor} exceeds cluster.brokers ({cluster.brokers})",
        )
    expectations = []
    for i, text in enumerate(top.get("expect", list, [])):
        match = _EXPECTATION.match(str(text))
        if not match or match["metric"] not in (*COUNT_KEYS, "unexpected", "valid", "complete"):
            raise _fail(
                f"expect[{i}]",
                f"cannot read {text!r}; expected e.g. 'acks=all lost == 0' "
                f"with a metric among {', '.join(COUNT_KEYS)}, or 'unexpected == 0', 'complete == true'",
            )
        raw = match["value"]
        expectations.append(
            Expectation(
                str(text),
                match["acks"],
                match["metric"],
                match["op"],
                raw == "true" if raw in ("true", "false") else int(raw),
            )
        )
    experiment = ExperimentSpec(
        name=name,
        duration_s=top.number("duration_s", 60.0, 1.0),
        seed=int(top.number("seed", 0)),
        cluster=cluster,
        workload=workload,
    )
    description = " ".join(str(top.get("description", str, "")).split())
    return Scenario(name, description, source, experiment, _fault_plan(top.data.get("faults")), expectations)


def _checked_value(build: Callable[[], Any], path: str) -> Any:
    try:
        return build()
    except ConfigError as exc:
        message = str(exc)
        raise (exc if message.startswith(path) else _fail(path, message)) from None


def load_scenario(name_or_path: str) -> Scenario:
    """A built-in scenario by name, or a YAML file by path."""
    path = Path(name_or_path)
    if not path.is_file():
        builtin = BUILTIN_DIR / f"{name_or_path}.yaml"
        if not builtin.is_file():
            known = ", ".join(sorted(p.stem for p in BUILTIN_DIR.glob("*.yaml")))
            raise ConfigError(
                f"{name_or_path!r} is neither a scenario file nor a built-in scenario ({known})"
            )
        path = builtin
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}{where}: not valid YAML ({getattr(exc, 'problem', exc)})") from None
    try:
        return parse_scenario(data, str(path))
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def builtin_scenarios() -> list[Scenario]:
    return [load_scenario(str(p)) for p in sorted(BUILTIN_DIR.glob("*.yaml"))]
