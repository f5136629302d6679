"""Scenario files: a whole experiment (cluster, workload, faults, expectations) in YAML.

Validation is strict and names the field path of every mistake (`faults.schedule[1].params.shape`),
because a typo in a chaos experiment otherwise silently tests something else. Built-in scenarios
live in `kchaos/scenarios/*.yaml`; see docs/SCENARIOS.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract.coordinators import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC
from contract.errors import ConfigError, TargetError
from contract.history import ACKS_MODES
from contract.limits import (
    MAX_DURATION_S,
    MAX_INT64,
    MAX_MESSAGE_BYTES,
    MAX_PARTITIONS,
    MAX_PRODUCERS,
    MAX_RATE,
    MAX_SEED,
    brief,
)
from contract.nodes import broker_name, controller_name, zookeeper_name
from faults import make_fault
from faults.members import MEMBER_FAULTS
from faults.producers import PRODUCER_FAULTS
from faults.schedule import MAX_ENTRIES
from faults.targets import coordinated_group, coordinated_transactional_id, named_nodes
from faults.triggers import Trigger
from harness.cluster import ClusterSpec
from harness.experiment import ExperimentSpec
from harness.transactional_producer import (
    MAX_HOLD_MS,
    MAX_PIPELINES,
    MAX_TXN_RECORDS,
    MAX_TXN_TOPICS,
    TRANSACTION_FIELDS,
    TransactionSpec,
)
from harness.workload import WorkloadSpec, txn_topics
from kchaos.expectations import HELP as EXPECTATION_HELP
from kchaos.expectations import Expectation
from kchaos.scenario_fields import MAX_NAME, MAX_TEXT, Fields, fail
from kchaos.scenario_groups import parse_groups
from kchaos.yamlfile import read_yaml

BUILTIN_DIR = Path(__file__).resolve().parent / "scenarios"
MAX_REPEAT = 1000
_HEAP = re.compile(r"[1-9][0-9]{0,6}[kmgKMG]")


@dataclass(frozen=True)
class FaultPlan:
    """What the nemesis does: explicit `schedule` entries, or a seeded generated timeline."""

    mode: str = "none"  # none | sequence | mix | schedule
    faults: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    schedule: list[dict[str, Any]] = field(default_factory=list)
    """{at_s, duration_s, fault, params, after (a Trigger or None), same_partition}, in order."""
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


def _acks_list(value: Any, path: str) -> tuple[str, ...]:
    items = [str(v) for v in value if isinstance(v, str | int)] if isinstance(value, list) else []
    if not items or len(items) != len(value) or any(v not in ACKS_MODES for v in items):
        raise fail(path, f"expected a non-empty list of {', '.join(ACKS_MODES)}, got {brief(value)}")
    return tuple(items)


def _fault_plan(data: Any) -> FaultPlan:
    f = Fields(data, "faults", ("mode", "faults", "schedule", "interval_s", "fault_duration_s"))
    entries: list[tuple[str, dict[str, Any]]] = []
    for i, item in enumerate(f.get("faults", list, [])):
        entry = Fields(item, f"faults.faults[{i}]", ("name", "params"))
        name, params = entry.text("name", None, MAX_NAME), entry.mapping("params")
        if name is None:
            raise fail(f"faults.faults[{i}].name", "required")
        _checked(make_fault, f"faults.faults[{i}]", name, params)
        entries.append((name, params))
    schedule: list[dict[str, Any]] = []
    for i, item in enumerate(f.get("schedule", list, [])):
        path = f"faults.schedule[{i}]"
        if isinstance(item, dict) and "repeat" in item:
            group = Fields(item, path, ("repeat", "steps"))
            steps = [
                _step(step, f"{path}.steps[{j}]", repeated=True)
                for j, step in enumerate(group.get("steps", list, []))
            ]
            if not steps:
                raise fail(f"{path}.steps", "a repeated group needs at least one step")
            times = group.integer("repeat", 1, 1, MAX_REPEAT)
            if len(schedule) + times * len(steps) > MAX_ENTRIES:
                raise fail(f"{path}.repeat", f"the schedule would hold more than {MAX_ENTRIES} steps")
            schedule += [dict(step) for _ in range(times) for step in steps]
        else:
            schedule.append(_step(item, path, repeated=False))
    default_mode = "schedule" if schedule else ("sequence" if entries else "none")
    mode = f.get("mode", str, default_mode)
    if mode not in ("none", "sequence", "mix", "schedule"):
        raise fail("faults.mode", f"expected none, sequence, mix or schedule, got {brief(mode)}")
    if mode in ("sequence", "mix") and not entries:
        raise fail("faults.faults", f"mode {mode!r} needs at least one fault")
    # Each mode reads one list: a fault in the other would be dropped without a word.
    if mode != "schedule" and schedule:
        raise fail("faults.schedule", f"mode {mode!r} runs no schedule (it is for mode 'schedule')")
    if mode == "schedule" and not schedule:
        raise fail("faults.schedule", "mode 'schedule' needs at least one step")
    if mode in ("none", "schedule") and entries:
        raise fail(
            "faults.faults", f"mode {mode!r} runs none of these (they are for modes 'sequence' and 'mix')"
        )
    return FaultPlan(
        mode,
        entries,
        schedule,
        f.number("interval_s", 10.0, 0.1, MAX_DURATION_S),
        f.number("fault_duration_s", 10.0, 0.1, MAX_DURATION_S),
    )


def check_aims(plan: FaultPlan, experiment: ExperimentSpec) -> None:
    """Every node, topic, partition, group and member a fault names must be in this scenario's
    cluster and workload: one aimed at nothing would only fail as it starts, mid-run, and the run
    would go on without its chaos."""
    spec, workload = experiment.cluster, experiment.workload
    nodes = [broker_name(n) for n in range(1, spec.brokers + 1)]
    if spec.metadata == "kraft":
        nodes += [] if spec.combined else [controller_name(n) for n in range(1, spec.controllers + 1)]
    elif spec.metadata == "zookeeper":
        nodes += [zookeeper_name(n) for n in range(1, spec.zookeepers + 1)]
    else:  # the release decides (KRaft from 4.0): either kind of node may be there
        nodes += [zookeeper_name(n) for n in range(1, spec.zookeepers + 1)]
        nodes += [controller_name(n) for n in range(1, spec.controllers + 1)]
    topics = [str(t["name"]) for t in workload.topics()] + [OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC]
    groups = {g.name: g.member_names() for g in workload.groups}
    aimed = [(f"faults.faults[{i}]", name, params) for i, (name, params) in enumerate(plan.faults)]
    aimed += [
        (f"faults.schedule (step {i + 1})", s["fault"], s["params"]) for i, s in enumerate(plan.schedule)
    ]
    for i, step in enumerate(plan.schedule):
        after = step["after"]
        if after is not None and after.event == "group-stable":
            path = f"faults.schedule (step {i + 1}).after"
            if not groups:
                raise fail(
                    path, "group-stable needs consumer groups, and the workload has none (workload.groups)"
                )
            if after.group is not None and after.group not in groups:
                raise fail(f"{path}.group", f"no group {brief(after.group)} in workload.groups")
    for path, fault, params in aimed:
        if fault in MEMBER_FAULTS and not groups:
            raise fail(path, f"{fault} needs consumer groups, and the workload has none (workload.groups)")
        if fault in PRODUCER_FAULTS and workload.transactions is None:
            raise fail(
                path,
                f"{fault} needs transactional producers, and the workload has none (workload.transactions)",
            )
        producer = params.get("producer")
        txn_processes = workload.txn_processes()
        if producer not in (None, "random", "all") and str(producer) not in txn_processes:
            raise fail(
                f"{path}.params.producer",
                f"no producer {brief(producer)}; transactional producers: {', '.join(txn_processes)}",
            )
        target = str(params.get("target", ""))
        if spec.metadata == "kraft" and target == "zookeeper":
            raise fail(f"{path}.params.target", "cluster.metadata is kraft: there is no ZooKeeper to aim at")
        if spec.metadata == "zookeeper" and target in ("quorum-follower", "quorum-majority"):
            raise fail(f"{path}.params.target", f"{target} is a KRaft voter; cluster.metadata is zookeeper")
        for key in ("target", "peers"):
            missing = [n for n in named_nodes(str(params.get(key, ""))) if n not in nodes]
            if missing:
                raise fail(
                    f"{path}.params.{key}", f"no node {missing[0]}; the cluster has {', '.join(nodes)}"
                )
            try:
                coordinated_group(str(params.get(key, "")), workload.coordinated_groups())
                coordinated_transactional_id(str(params.get(key, "")), workload.transactional_ids())
            except TargetError as exc:
                raise fail(f"{path}.params.{key}", str(exc)) from None
        topic, partition = params.get("topic"), params.get("partition")
        if topic is not None and str(topic) not in topics:
            raise fail(
                f"{path}.params.topic", f"no topic {brief(topic)}; the workload has {', '.join(topics)}"
            )
        internal = (OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC)
        if partition is not None and str(topic) not in internal and int(partition) >= workload.partitions:
            raise fail(
                f"{path}.params.partition", f"the workload's topics have {workload.partitions} partitions"
            )
        group, member = params.get("group"), params.get("member")
        if group is not None and str(group) not in groups:
            raise fail(f"{path}.params.group", f"no group {brief(group)} in workload.groups")
        names = groups.get(str(group)) or [n for each in groups.values() for n in each]
        if member not in (None, "random", "all") and str(member) not in names:
            raise fail(
                f"{path}.params.member",
                f"no member {brief(member)}; members are {', '.join(names) or 'none'}",
            )


def _step(item: Any, path: str, repeated: bool) -> dict[str, Any]:
    """One schedule step: a fault started at `at_s`, or `after` an event (`faults.triggers`)."""
    entry = Fields(item, path, ("at_s", "after", "duration_s", "fault", "params", "same_partition"))
    name, params = entry.text("fault", None, MAX_NAME), entry.mapping("params")
    if name is None:
        raise fail(f"{path}.fault", "required")
    _checked(make_fault, path, name, params)
    after = None
    if "after" in entry.data:
        if "at_s" in entry.data:
            raise fail(f"{path}.after", "a step starts at a time (at_s) or after an event, not both")
        after = _checked_value(lambda: Trigger.from_mapping(entry.data["after"]), f"{path}.after")
    elif repeated:
        raise fail(f"{path}.after", "a step of a repeated group starts after an event (a time would repeat)")
    same_partition = entry.get("same_partition", bool, False)
    if same_partition:
        _checked(make_fault, f"{path}.same_partition", name, {**params, "topic": "t", "partition": 0})
    return {
        "at_s": entry.number("at_s", 0.0, 0.0, MAX_DURATION_S),
        "duration_s": entry.number("duration_s", 10.0, 0.1, MAX_DURATION_S),
        "fault": name,
        "params": params,
        "after": after,
        "same_partition": same_partition,
    }


def _checked(build: Callable[..., Any], path: str, *args: Any) -> None:
    try:
        build(*args)
    except ConfigError as exc:
        raise fail(path, str(exc)) from None


def parse_scenario(data: Any, source: str) -> Scenario:
    top = Fields(
        data, "", ("name", "description", "duration_s", "seed", "cluster", "workload", "faults", "expect")
    )
    name = top.text("name", None, MAX_NAME) or Path(source).stem
    c = Fields(
        top.data.get("cluster"),
        "cluster",
        (
            "brokers",
            "zookeepers",
            "broker_config",
            "image",
            "kafka",
            "base_image",
            "heap",
            "metadata",
            "controllers",
            "combined",
            "features",
            "zookeeper_only",
            "disk",
        ),
    )
    kafka = c.text("kafka", None)
    cluster = _checked_value(
        lambda: ClusterSpec(
            brokers=c.integer("brokers", 3, 1, MAX_INT64),  # ClusterSpec says how many it can start
            zookeepers=c.integer("zookeepers", 1, 1, MAX_INT64),
            broker_config=c.mapping("broker_config"),
            image=c.text("image", None),
            kafka=kafka,
            heap=c.text("heap", "256m", pattern=_HEAP),
            **({"base_image": c.text("base_image", None)} if "base_image" in c.data else {}),
            metadata=c.text("metadata", None),
            controllers=c.integer("controllers", 1, 1, MAX_INT64),
            combined=c.get("combined", bool, False),
            features=c.mapping("features"),
            zookeeper_only=c.text("zookeeper_only", "") or "",
            disk=c.text("disk", "plain") or "plain",
        ),
        "cluster",
    )
    w = Fields(
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
            "groups",
            "transactions",
        ),
    )
    acks = _acks_list(w.data["acks"], "workload.acks") if "acks" in w.data else ACKS_MODES
    transactions = _transactions(w.data.get("transactions"))
    workload = _checked_value(
        lambda: WorkloadSpec(
            acks=acks,
            producers_per_mode=w.integer("producers_per_mode", 1, 1, MAX_PRODUCERS),
            partitions=w.integer("partitions", 3, 1, MAX_PARTITIONS),
            replication_factor=w.integer("replication_factor", min(3, cluster.brokers), 1, MAX_INT64),
            rate_per_s=w.number("rate_per_s", 200.0, 0.0, MAX_RATE),
            message_size=w.integer("message_size", 0, 0, MAX_MESSAGE_BYTES),
            producer_config=w.mapping("producer_config"),
            topic_config=w.mapping("topic_config"),
            live_consumers=w.integer("live_consumers", 1, 0, MAX_PRODUCERS),
            groups=parse_groups(w.data.get("groups"), "workload.groups", acks, txn_topics(transactions)),
            transactions=transactions,
        ),
        "workload",
    )
    if workload.replication_factor > cluster.brokers:
        raise fail(
            "workload.replication_factor",
            f"{workload.replication_factor} exceeds cluster.brokers ({cluster.brokers})",
        )
    expectations = []
    for i, text in enumerate(top.get("expect", list, [])):
        expectation = Expectation.parse(text)
        if expectation is None:
            raise fail(f"expect[{i}]", f"cannot read {brief(text)}; {EXPECTATION_HELP}")
        if expectation.group and expectation.group not in {g.name for g in workload.groups}:
            raise fail(f"expect[{i}]", f"no group {expectation.group!r} in workload.groups")
        if expectation.acks and expectation.acks not in workload.acks:
            raise fail(
                f"expect[{i}]", f"the workload writes no acks={expectation.acks} topic (workload.acks)"
            )
        expectations.append(expectation)
    experiment = ExperimentSpec(
        name=name,
        duration_s=top.number("duration_s", 60.0, 1.0, MAX_DURATION_S),
        seed=top.integer("seed", 0, 0, MAX_SEED),
        cluster=cluster,
        workload=workload,
    )
    description = " ".join(top.get("description", str, "").split())
    if len(description) > MAX_TEXT:
        raise fail("description", f"longer than {MAX_TEXT} characters")
    plan = _fault_plan(top.data.get("faults"))
    check_aims(plan, experiment)
    return Scenario(name, description, source, experiment, plan, expectations)


def _transactions(value: Any) -> TransactionSpec | None:
    """`workload.transactions`: transactional producers writing topics of their own."""
    if value is None:
        return None
    t = Fields(value, "workload.transactions", TRANSACTION_FIELDS)
    records, where = t.get("records", list, [1, 10]), "workload.transactions.records"
    if len(records) != 2 or not all(isinstance(n, int) and not isinstance(n, bool) for n in records):
        raise fail(where, f"expected [min, max] record counts, got {brief(records)}")
    low, high = records
    if not 1 <= low <= high <= MAX_TXN_RECORDS:
        raise fail(where, f"expected 1 <= min <= max <= {MAX_TXN_RECORDS}, got {records}")
    return TransactionSpec(
        producers=t.integer("producers", 1, 1, MAX_PRODUCERS),
        topics=t.integer("topics", 2, 1, MAX_TXN_TOPICS),
        records=(low, high),
        abort_rate=t.number("abort_rate", 0.1, 0.0, 1.0),
        early_abort_rate=t.number("early_abort_rate", 0.1, 0.0, 1.0),
        transaction_timeout_ms=t.integer("transaction_timeout_ms", 10_000, 1000, 900_000),
        call_timeout_ms=t.integer("call_timeout_ms", 10_000, 100, 600_000),
        on_commit_timeout=t.text("on_commit_timeout", "retry"),
        hold_ms=t.integer("hold_ms", 0, 0, MAX_HOLD_MS),
        pipelines=t.integer("pipelines", 0, 0, MAX_PIPELINES),
        rewind_on_abort=t.get("rewind_on_abort", bool, True),
    )


def _checked_value(build: Callable[[], Any], path: str) -> Any:
    try:
        return build()
    except ConfigError as exc:
        message = str(exc)
        raise (exc if message.startswith(path) else fail(path, message)) from None


def load_scenario(name_or_path: str) -> Scenario:
    """A built-in scenario by name, or a YAML file by path."""
    path = Path(name_or_path)
    if not _is_file(path):
        builtin = BUILTIN_DIR / f"{name_or_path}.yaml"
        if not _is_file(builtin):
            known = ", ".join(sorted(p.stem for p in BUILTIN_DIR.glob("*.yaml")))
            raise ConfigError(
                f"{brief(name_or_path)} is neither a scenario file nor a built-in scenario ({known})"
            )
        path = builtin
    data = read_yaml(path)
    try:
        return parse_scenario(data, str(path))
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # a name too long for the filesystem is no file either
        return False


def builtin_scenarios() -> list[Scenario]:
    return [load_scenario(str(p)) for p in sorted(BUILTIN_DIR.glob("*.yaml"))]
