"""A scenario's `expect:` lines judged against a result.json: held, failed, or unknown when a count
rests on an incomplete final read or a recovery time is a lower bound."""

from __future__ import annotations

from typing import Any

import pytest

from contract.expectation_outcomes import ExpectationOutcome
from kchaos.scenario import parse_scenario


def _judged(outcome: ExpectationOutcome) -> tuple[str, Any]:
    return outcome.verdict, outcome.observed


def test_expectations_evaluate_against_a_result() -> None:
    scenario = parse_scenario(
        {"expect": ["acks=all lost == 0", "acks=1 lost > 0", "complete == true"]}, "inline"
    )
    result = {"complete": True, "acks": {"all": {"lost": 0}, "1": {"lost": 0}}}
    judged = [e.evaluate(result) for e in scenario.expectations]
    assert [_judged(e) for e in judged] == [("held", 0), ("failed", 0), ("held", True)]
    assert [e.held for e in judged] == [True, False, True]
    grouped = parse_scenario(
        {"workload": {"groups": [{"name": "g-alo"}]}, "expect": ["group=g-alo redelivered > 0"]}, "inline"
    )
    (expectation,) = grouped.expectations
    assert _judged(expectation.evaluate({"groups": {"g-alo": {"redelivered": 3}}})) == ("held", 3)
    assert _judged(expectation.evaluate({})) == ("failed", None)  # a result without the group cannot hold it


# acks=1 wrote to chaos-acks-1, whose partition 0 the final read did not finish; acks=all is complete.
INCOMPLETE = {
    "complete": False,
    "incomplete_partitions": [{"topic": "chaos-acks-1", "partition": 0}],
    "topics": [{"topic": "chaos-acks-1", "acks": "1"}, {"topic": "chaos-acks-all", "acks": "all"}],
    "acks": {"1": {"lost": 2, "divergent": 7}, "all": {"lost": 0}},
    "groups": {"g-alo": {"topics": ["chaos-acks-1"], "skipped": 0}, "g-amo": {"topics": [], "skipped": 0}},
}


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        # A count over complete final reads only is a lower bound where a read is incomplete:
        ("acks=1 lost == 0", "failed"),  # 2 or more is never 0
        ("acks=1 lost == 2", "unknown"),  # 2 or more may be 3
        ("acks=1 lost <= 5", "unknown"),
        ("acks=1 lost < 2", "failed"),
        ("acks=1 lost > 1", "held"),  # 2 or more is always more than 1
        ("acks=1 lost >= 3", "unknown"),
        ("acks=1 lost != 1", "held"),
        ("acks=1 lost != 2", "unknown"),
        ("group=g-alo skipped == 0", "unknown"),
        # counts that do not rest on the final read, and scopes whose reads are complete, are judged
        ("acks=1 divergent == 7", "held"),
        ("acks=all lost == 0", "held"),
        ("group=g-amo skipped == 0", "held"),
        ("complete == false", "held"),
    ],
)
def test_an_expectation_on_a_count_over_an_incomplete_final_read_is_judged_only_when_certain(
    text: str, verdict: str
) -> None:
    groups = [{"name": "g-alo"}, {"name": "g-amo"}]
    (expectation,) = parse_scenario({"workload": {"groups": groups}, "expect": [text]}, "inline").expectations
    outcome = expectation.evaluate(INCOMPLETE)
    assert (outcome.verdict, outcome.held) == (verdict, verdict == "held")
    if verdict == "unknown":
        assert outcome.why is not None and "chaos-acks-1 partition 0 is incomplete" in outcome.why


@pytest.mark.parametrize(
    ("text", "acks", "verdict"),
    [
        ("acks=all heal_recovery_ms <= 10000", {"heal_recovery_ms": 2500.0}, "held"),
        ("acks=all heal_recovery_ms <= 2000", {"heal_recovery_ms": 2500.0}, "failed"),
        # some partition took no write before the writes ended: 25 s or more after the heal
        (
            "acks=all heal_recovery_ms <= 10000",
            {"heal_recovery_ms": 25200.0, "heal_recovery_lower_bound": True},
            "failed",
        ),
        (
            "acks=all heal_recovery_ms <= 30000",
            {"heal_recovery_ms": 25200.0, "heal_recovery_lower_bound": True},
            "unknown",
        ),
        (
            "acks=all heal_recovery_ms > 20000",
            {"heal_recovery_ms": 25200.0, "heal_recovery_lower_bound": True},
            "held",
        ),
        (
            "acks=all heal_recovery_ms <= 10000",
            {"heal_recovery_ms": None},
            "held",
        ),  # no heal followed by writes
        ("acks=all heal_recovery_ms <= 10000", {}, "failed"),  # a result with no such count cannot hold it
    ],
)
def test_an_expectation_on_the_recovery_after_heals_is_judged_like_a_lower_bound_when_it_is_one(
    text: str, acks: dict[str, Any], verdict: str
) -> None:
    (expectation,) = parse_scenario({"expect": [text]}, "inline").expectations
    outcome = expectation.evaluate({"acks": {"all": acks}})
    assert outcome.verdict == verdict, outcome
    if acks.get("heal_recovery_lower_bound"):  # said whatever the verdict
        assert outcome.why is not None and "the true time is 25200 ms or more" in outcome.why


@pytest.mark.parametrize(
    ("group", "verdict", "why"),
    [
        ({"heal_recovery_ms": 4500.0, "heal_recovery_lower_bound": False}, "held", None),
        ({"heal_recovery_ms": 12000.0, "heal_recovery_lower_bound": False}, "failed", None),
        (
            {"heal_recovery_ms": 12000.0, "heal_recovery_lower_bound": True},
            "failed",
            "group g-alo polled no record again of some partition written to, by the workload's end or "
            "the next fault: the true time is 12000 ms or more",
        ),
        ({"heal_recovery_ms": 8000.0, "heal_recovery_lower_bound": True}, "unknown", "8000 ms or more"),
        (
            {"heal_recovery_ms": None, "heal_recovery_lower_bound": False},
            "held",
            "no write was acknowledged after a heal on the group's topics",
        ),
        ({"skipped": 0}, "failed", "no such count"),  # a result from before groups' recovery
    ],
)
def test_a_groups_recovery_after_heals_is_judged_in_the_groups_entry(
    group: dict[str, Any], verdict: str, why: str | None
) -> None:
    scenario = {
        "workload": {"groups": [{"name": "g-alo"}]},
        "expect": ["group=g-alo heal_recovery_ms <= 10000"],
    }
    (expectation,) = parse_scenario(scenario, "inline").expectations
    # the acks modes' recovery is not the group's
    result = {"acks": {"all": {"heal_recovery_ms": 1.0}}, "groups": {"g-alo": group}}
    outcome = expectation.evaluate(result)
    assert outcome.verdict == verdict, outcome
    assert (outcome.why is None) if why is None else (outcome.why is not None and why in outcome.why), outcome
