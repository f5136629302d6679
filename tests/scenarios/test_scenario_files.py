"""Scenario files: every built-in parses, mistakes name their field path, schedules follow the seed."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from contract.errors import ConfigError
from kchaos.cli import main
from kchaos.run_cli import matrix_variant
from kchaos.runner import build_schedule
from kchaos.scenario import builtin_scenarios, load_scenario, parse_scenario
from kchaos.scenario_dump import scenario_data, scenario_yaml

KILL = {"name": "kill"}
STEP = {"fault": "kill"}
EXPECTED_BUILTINS = {
    "auto-commit-crash",
    "bridge-and-ring",
    "clean-election",
    "baseline",
    "leader-kill",
    "controller-kill",
    "controller-pause",
    "isolate-leader",
    "zk-session-pause",
    "halves",
    "rolling-restart",
    "slow-network",
    "lossy-network",
    "lossy-zookeeper",
    "unclean-election",
    "nemesis-mix",
    "retry-reorder",
    "hw-truncation",
    "power-loss",
}


def test_every_builtin_scenario_parses_and_describes_itself() -> None:
    scenarios = {s.name: s for s in builtin_scenarios()}
    assert set(scenarios) >= EXPECTED_BUILTINS
    for scenario in scenarios.values():
        assert len(scenario.description) > 60, scenario.name
    assert scenarios["baseline"].faults.mode == "none"
    assert scenarios["unclean-election"].experiment.cluster.broker_config["min.insync.replicas"] == 1


FINDINGS_SCENARIOS = sorted((Path(__file__).parents[2] / "docs" / "findings").glob("*.yaml"))


@pytest.mark.parametrize("path", FINDINGS_SCENARIOS, ids=[p.stem for p in FINDINGS_SCENARIOS])
def test_every_findings_scenario_loads_under_its_file_name(path: Path) -> None:
    # docs/FINDINGS.md tells readers to run these: each must load as it is written.
    scenario = load_scenario(str(path))
    assert scenario.name == path.stem
    assert len(scenario.description) > 60


def test_every_builtin_scenario_runs_on_kraft_or_says_why_not() -> None:
    # What binds a scenario to ZooKeeper: a fault on ZooKeeper's nodes, or a ZooKeeper session setting.
    for scenario in builtin_scenarios():
        aims = [params for _, params in scenario.faults.faults] + [
            s["params"] for s in scenario.faults.schedule
        ]
        on_zookeeper = any(p.get("target") == "zookeeper" for p in aims) or any(
            key.startswith("zookeeper.") for key in scenario.experiment.cluster.broker_config
        )
        said = scenario.experiment.cluster.zookeeper_only
        assert on_zookeeper == bool(said), (scenario.name, said)
    assert {s.name for s in builtin_scenarios() if s.experiment.cluster.zookeeper_only} == {
        "controller-pause",
        "lossy-zookeeper",
        "zk-session-pause",
    }


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"cluster": {"brokrs": 3}}, "cluster.brokrs: unknown field (did you mean 'brokers'?)"),
        ({"cluster": {"brokers": "three"}}, "cluster.brokers: expected an integer, got 'three'"),
        ({"cluster": {"brokers": 2.5}}, "cluster.brokers: expected an integer, got 2.5"),
        ({"cluster": {"brokers": float("nan")}}, "cluster.brokers: expected an integer, got nan"),
        ({"seed": float("nan")}, "seed: expected an integer, got nan"),
        ({"duration_s": float("inf")}, "duration_s: expected a finite number, got inf"),
        ({"duration_s": 1e300}, "duration_s: expected a number from 1 to 604800, got 1e+300"),
        ({"workload": {"rate_per_s": True}}, "workload.rate_per_s: expected a number, got True"),
        ({"faults": {"interval_s": float("nan")}}, "faults.interval_s: expected a finite number, got nan"),
        ({"cluster": {"heap": "256m -Dx=1"}}, "cluster.heap: expected"),
        ({"cluster": {"kafka": "a\x00b"}}, "cluster.kafka: control characters are not allowed"),
        ({"cluster": {"broker_config": {"x": [1]}}}, "cluster.broker_config.x: expected a string, number"),
        ({"workload": {"producer_config": {1: "x"}}}, "workload.producer_config.1: keys must be strings"),
        ({"name": "n" * 101}, "name: longer than 100 characters"),
        ({"expect": [{"lost": 0}]}, "expect[0]: cannot read {'lost': 0}"),
        ({"expect": ["lost == " + "9" * 30]}, "expect[0]: cannot read"),
        (
            {"faults": {"schedule": [{"fault": "kill", "params": {"target": 5}}]}},
            "faults.schedule[0]: fault 'kill': param 'target': expected text, got 5",
        ),
        (
            {"faults": {"schedule": [{"fault": "kill", "params": {"partition": float("inf")}}]}},
            "faults.schedule[0].params.partition: expected a finite number, got inf",
        ),
        (
            {"faults": {"schedule": [{"fault": "kill", "params": {"partition": 1.5}}]}},
            "faults.schedule[0]: fault 'kill': param 'partition': expected an integer, got 1.5",
        ),
        (
            {"faults": {"faults": [{"name": "partition", "params": {"shape": 5}}]}},
            "faults.faults[0]: fault 'partition': param 'shape' must be one of",
        ),
        (
            {"faults": {"faults": [{"name": "rolling-restart", "params": {"kill": 5}}]}},
            "param 'kill': expected true or false, got 5",
        ),
        (
            {"faults": {"faults": [{"name": "lossy", "params": {"probability": "nan"}}]}},
            "param 'probability': expected a finite number, got nan",
        ),
        ({"workload": {"acks": ["2"]}}, "workload.acks: expected a non-empty list of 0, 1, all"),
        (
            {"workload": {"replication_factor": 5}},
            "workload.replication_factor: 5 exceeds cluster.brokers (3)",
        ),
        ({"faults": {"faults": [{"name": "explode"}]}}, "faults.faults[0]: unknown fault 'explode'"),
        (
            {"faults": {"faults": [{"name": "partition", "params": {"shape": "triangle"}}]}},
            "faults.faults[0]:",
        ),
        (
            {"faults": {"schedule": [{"at_s": 1, "fault": "kill", "params": {"colour": 1}}]}},
            "faults.schedule[0]:",
        ),
        (
            {"faults": {"schedule": [{"at_s": 1, "after": {"event": "start"}, "fault": "kill"}]}},
            "faults.schedule[0].after: a step starts at a time (at_s) or after an event, not both",
        ),
        (
            {"faults": {"schedule": [{"after": {"event": "isr-shrunk"}, "fault": "kill"}]}},
            "faults.schedule[0].after: event: expected one of start, healed",
        ),
        (
            {"faults": {"schedule": [{"repeat": 2, "steps": [{"at_s": 5, "fault": "kill"}]}]}},
            "faults.schedule[0].steps[0].after: a step of a repeated group starts after an event",
        ),
        (
            {
                "faults": {
                    "schedule": [{"repeat": 0, "steps": [{"after": {"event": "start"}, "fault": "kill"}]}]
                }
            },
            "faults.schedule[0].repeat: expected an integer from 1 to 1000, got 0",
        ),
        (
            {
                "faults": {
                    "schedule": [
                        {"after": {"event": "start"}, "fault": "rolling-restart", "same_partition": True}
                    ]
                }
            },
            "faults.schedule[0].same_partition: fault 'rolling-restart' has no param 'topic'",
        ),
        ({"expect": ["acks=all lost is zero"]}, "expect[0]: cannot read 'acks=all lost is zero'"),
        (
            {"workload": {"groups": [{"nme": "g"}]}},
            "workload.groups[0].nme: unknown field (did you mean 'name'?)",
        ),
        ({"workload": {"groups": [{"acks": ["all"]}]}}, "workload.groups[0].name: required"),
        (
            {"workload": {"groups": [{"name": "g", "commit": "sometimes"}]}},
            "workload.groups[0]: group 'g': commit: expected one of after-process, before-process, auto",
        ),
        (
            {"workload": {"acks": ["all"], "groups": [{"name": "g", "acks": ["1"]}]}},
            "workload.groups[0].acks: expected a non-empty list of the modes written (all)",
        ),
        (
            {"workload": {"groups": [{"name": "g", "commit": "auto", "commit_interval_s": 2}]}},
            "commit_interval_s applies to commit: after-process only",
        ),
        (
            {"workload": {"groups": [{"name": "g"}, {"name": "g"}]}},
            "workload.groups: two groups have the same name",
        ),
        ({"workload": {"groups": [{"name": "g", "members": 0}]}}, "workload.groups[0].members: expected"),
        ({"expect": ["group=g skipped == 0"]}, "expect[0]: no group 'g' in workload.groups"),
        (
            {"workload": {"groups": [{"name": "g"}]}, "expect": ["group=g lost == 0"]},
            "expect[0]: cannot read",
        ),
        ({"duration_s": 0}, "duration_s: expected a number from 1 to 604800, got 0"),
        # Expectations that could never hold, and would fail every run they are in:
        ({"expect": ["lost == 0"]}, "expect[0]: cannot read 'lost == 0'"),  # lost of which acks mode?
        ({"expect": ["valid == 2"]}, "expect[0]: cannot read 'valid == 2'"),
        ({"expect": ["acks=all lost == true"]}, "expect[0]: cannot read"),
        ({"expect": ["acks=all unexpected == 0"]}, "expect[0]: cannot read"),
        (
            {"workload": {"acks": ["all"]}, "expect": ["acks=1 lost == 0"]},
            "expect[0]: the workload writes no acks=1 topic (workload.acks)",
        ),
        # Each mode reads one list of faults: one given to the other would be dropped without a word.
        (
            {"faults": {"mode": "sequence", "faults": [KILL], "schedule": [{"at_s": 5, **STEP}]}},
            "faults.schedule: mode 'sequence' runs no schedule (it is for mode 'schedule')",
        ),
        ({"faults": {"mode": "none", "faults": [KILL]}}, "faults.faults: mode 'none' runs none of these"),
        ({"faults": {"mode": "schedule"}}, "faults.schedule: mode 'schedule' needs at least one step"),
        # What a fault aims at must be in this scenario's cluster and workload, or it would only fail
        # as it starts, mid-run, and the run would go on without its chaos.
        ({"faults": {"faults": [{"name": "kill", "params": {"target": "leadr"}}]}}, "got 'leadr'"),
        (
            {"faults": {"faults": [{"name": "kill", "params": {"target": "kafka-1,kafka-9"}}]}},
            "faults.faults[0].params.target: no node kafka-9; the cluster has "
            "kafka-1, kafka-2, kafka-3, zk-1",
        ),
        (
            {"faults": {"schedule": [{"fault": "kill", "params": {"topic": "nosuch"}}]}},
            "faults.schedule (step 1).params.topic: no topic 'nosuch'; the workload has chaos-acks-0,",
        ),
        (
            {"faults": {"faults": [{"name": "kill", "params": {"topic": "chaos-acks-1", "partition": 3}}]}},
            "faults.faults[0].params.partition: the workload's topics have 3 partitions",
        ),
        (
            {"faults": {"faults": [{"name": "kill-member"}]}},
            "faults.faults[0]: kill-member needs consumer groups, and the workload has none",
        ),
        (
            {
                "workload": {"groups": [{"name": "g", "members": 2}]},
                "faults": {"faults": [{"name": "kill-member", "params": {"member": "g-2"}}]},
            },
            "faults.faults[0].params.member: no member 'g-2'; members are g-0, g-1",
        ),
        (
            {
                "workload": {"groups": [{"name": "g"}]},
                "faults": {"faults": [{"name": "kill", "params": {"target": "coordinator:h"}}]},
            },
            "faults.faults[0].params.target: target 'coordinator:h': no group 'h' (groups: g)",
        ),
        (
            {
                "workload": {"groups": [{"name": "g"}], "transactions": {"pipelines": 1}},
                "faults": {"faults": [{"name": "kill", "params": {"target": "coordinator"}}]},
            },
            "faults.faults[0].params.target: target 'coordinator': say whose, one of coordinator:g, "
            "coordinator:kchaos-pipe",
        ),
        (  # the pipeline's group has a coordinator to aim at too
            {
                "workload": {"transactions": {"pipelines": 1}},
                "faults": {"faults": [{"name": "kill", "params": {"target": "coordinator:kchaos-pipe"}}]},
            },
            None,
        ),
        (
            {"faults": {"faults": [{"name": "freeze-producer"}]}},
            "faults.faults[0]: freeze-producer needs transactional producers, and the workload has none",
        ),
        (
            {
                "workload": {"transactions": {"producers": 2}},
                "faults": {"faults": [{"name": "freeze-producer", "params": {"producer": "tx-2"}}]},
            },
            "faults.faults[0].params.producer: no producer 'tx-2'; transactional producers: tx-0, tx-1",
        ),
        (
            {
                "workload": {"transactions": {}},
                "faults": {"faults": [{"name": "kill", "params": {"target": "txn-coordinator:kchaos-tx-7"}}]},
            },
            "faults.faults[0].params.target: target 'txn-coordinator:kchaos-tx-7': no transactional.id",
        ),
        (
            {"workload": {"transactions": {"records": [5, 2]}}},
            "workload.transactions.records: expected 1 <= min <= max <= 1000, got [5, 2]",
        ),
        (
            {"workload": {"transactions": {"on_commit_timeout": "shrug"}}},
            "workload.transactions.on_commit_timeout: expected retry or abort, got 'shrug'",
        ),
        (
            {"workload": {"transactions": {"abort_rate": 2}}},
            "workload.transactions.abort_rate",
        ),
        (
            {"faults": {"mode": "schedule", "schedule": [{"after": {"event": "group-stable"}, **STEP}]}},
            "faults.schedule (step 1).after: group-stable needs consumer groups, and the workload has none",
        ),
        (
            {
                "workload": {"groups": [{"name": "g"}]},
                "faults": {"schedule": [{"after": {"event": "group-stable", "group": "h"}, **STEP}]},
            },
            "faults.schedule (step 1).after.group: no group 'h' in workload.groups",
        ),
        ({"cluster": {"broker_config": {"broker.id": 5}}, "name": "x"}, None),  # checked at cluster start
        (
            {
                "cluster": {"metadata": "kraft"},
                "faults": {"schedule": [{**STEP, "params": {"target": "zookeeper"}}]},
            },
            "faults.schedule (step 1).params.target: cluster.metadata is kraft: "
            "there is no ZooKeeper to aim at",
        ),
        (
            {
                "cluster": {"metadata": "zookeeper"},
                "faults": {"schedule": [{**STEP, "params": {"target": "quorum-follower"}}]},
            },
            "faults.schedule (step 1).params.target: quorum-follower is a KRaft voter; "
            "cluster.metadata is zookeeper",
        ),
    ],
)
def test_mistakes_name_the_field_path(document: dict[str, object], message: str | None) -> None:
    if message is None:
        parse_scenario(document, "inline")
        return
    with pytest.raises(ConfigError) as caught:
        parse_scenario(document, "inline")
    assert message in str(caught.value)


def test_a_broken_scenario_file_exits_2_with_file_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: broken\nworkload:\n  rate_per_s: fast\n")
    assert main(["run", str(broken)]) == 2
    err = capsys.readouterr().err
    assert str(broken) in err.replace("\n", "") and "workload.rate_per_s" in err
    assert "Traceback" not in err


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ncluster:\n  brokers: [3\n")
    with pytest.raises(ConfigError, match=r"bad.yaml:\d+: not valid YAML"):
        load_scenario(str(bad))


def test_unknown_scenario_lists_the_builtins() -> None:
    with pytest.raises(ConfigError, match="isolate-leader"):
        load_scenario("no-such-scenario")


def test_same_seed_same_schedule_other_seed_other_schedule() -> None:
    plan = load_scenario("nemesis-mix").faults
    first, again, other = (build_schedule(plan, seed, 90, "s.yaml").to_json() for seed in (7, 7, 8))
    assert first == again
    assert first != other
    assert len(first) >= 3


BOMB = b"a: &a [x, x, x, x, x, x, x, x, x, x]\n" + b"".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 10)}]\n".encode() for p, n in zip("abcdefg", "bcdefgh", strict=True)
)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"name: x\ndescription: caf\xe9\n", "case.yaml:2: not UTF-8 (byte 0xe9)"),
        (b"name: x\n" + b"#" * (1024 * 1024) + b"\n", "case.yaml: larger than 1024 KiB"),
        (BOMB + b"name: x\n", "case.yaml: more than 100000 values once its aliases are expanded"),
        (b"name: x\nseed: 2024-13-01\n", "case.yaml: not valid YAML (month must be in 1..12)"),
        (b"name: x\nseed: !!int x\n", "case.yaml: not valid YAML (invalid literal for int()"),
        (b"name: x\nexpect: " + b"[" * 10_000 + b"]" * 10_000 + b"\n", "case.yaml: nested too deeply"),
        (b"name: x\ndescription: a\x00b\n", "case.yaml:2: not valid YAML (special characters"),
        (  # PyYAML alone would keep the last, and run ten minutes
            b"name: x\nduration_s: 10\nduration_s: 600\n",
            "case.yaml:3: not valid YAML (key 'duration_s' given twice in one mapping)",
        ),
    ],
)
def test_hostile_scenario_files_are_one_clear_error(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "case.yaml"
    path.write_bytes(content)
    with pytest.raises(ConfigError) as caught:
        load_scenario(str(path))
    assert str(caught.value).startswith(str(tmp_path / message)), caught.value


def test_a_scenario_name_too_long_for_a_file_is_no_crash() -> None:
    with pytest.raises(ConfigError, match="is neither a scenario file nor a built-in scenario"):
        load_scenario("x" * 5000)


def test_a_run_too_short_for_any_fault_of_its_plan_is_an_error() -> None:
    plan = load_scenario("isolate-leader").faults
    with pytest.raises(
        ConfigError, match=r"^s\.yaml: faults: no fault fits in 20 s: the first starts 7\.5-22\.5 s in"
    ):
        build_schedule(plan, 7, 20, "s.yaml")
    assert (
        build_schedule(load_scenario("baseline").faults, 7, 20, "s.yaml") is None
    )  # no faults planned: fine


def test_a_matrix_variant_writes_a_scenario_that_loads_again() -> None:
    # baseline expects counts of acks=1; its acks=all variant cannot, and `kchaos replay` of the
    # variant's run reads its scenario.yaml back.
    variant = matrix_variant(load_scenario("baseline"), ("all",))
    back = parse_scenario(yaml.safe_load(scenario_yaml(variant)), "back")
    assert back.experiment.workload.acks == ("all",)
    assert [e.text for e in back.expectations] == [e.text for e in variant.expectations]
    assert {e.acks for e in variant.expectations} == {"all", None}
    with pytest.raises(
        ConfigError, match=r"with acks all: faults.faults\[0\].params.topic: no topic 'chaos-acks-1'"
    ):
        matrix_variant(load_scenario("isolate-leader"), ("all",))  # its faults isolate chaos-acks-1's leader


def test_a_scheduled_step_that_would_start_after_the_run_is_an_error() -> None:
    plan = parse_scenario({"faults": {"schedule": [{"at_s": 5, **STEP}, {"at_s": 500, **STEP}]}}, "s").faults
    assert build_schedule(plan, 7, 501, "s.yaml") is not None
    with pytest.raises(ConfigError) as caught:
        build_schedule(plan, 7, 30, "s.yaml")
    assert str(caught.value) == (
        "s.yaml: faults.schedule: step 2 (kill) starts at 500 s, not within the run's 30 s "
        "(duration_s, or --duration)"
    )


def test_event_timed_steps_and_repeated_groups_expand_in_order_and_round_trip() -> None:
    leader_change = {"event": "leader-change", "delay_s": 1}
    document = {
        "duration_s": 120,
        "faults": {
            "schedule": [
                {"at_s": 5, "duration_s": 30, "fault": "partition", "params": {"shape": "among"}},
                {
                    "repeat": 2,
                    "steps": [
                        {
                            "after": {"event": "healed", "delay_s": 5},
                            "duration_s": 8,
                            "fault": "kill",
                            "params": {"target": "leader"},
                        },
                        {"after": leader_change, "duration_s": 6, "fault": "kill", "same_partition": True},
                    ],
                },
            ]
        },
    }
    scenario = parse_scenario(document, "inline")
    schedule = build_schedule(scenario.faults, seed=1, duration_s=120, source=scenario.source)
    assert schedule is not None and schedule.event_timed
    assert [
        (e.fault, e.after.event if e.after else e.start_s, e.same_partition) for e in schedule.entries
    ] == [
        ("partition", 5.0, False),
        ("kill", "healed", False),
        ("kill", "leader-change", True),
        ("kill", "healed", False),
        ("kill", "leader-change", True),
    ]
    assert schedule.entries[2].duration_s == 6 and schedule.entries[2].after.delay_s == 1  # type: ignore[union-attr]
    again = parse_scenario(scenario_data(scenario), "again")
    assert again.faults == scenario.faults
    assert scenario_data(scenario)["faults"]["schedule"][2]["after"] == {
        "event": "leader-change",
        "delay_s": 1.0,
        "within_s": 120.0,
    }
