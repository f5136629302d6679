"""Consumer groups on a real cluster: member processes under member faults, checked on Spark."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kchaos.pytest_plugin import ChaosRun

pytestmark = [pytest.mark.docker, pytest.mark.spark]

S = 1_000_000_000


def consumes(root: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (root / "history/consumes.jsonl").read_text().splitlines()]


def test_consumer_crash_redelivers_but_never_skips(chaos_run: ChaosRun) -> None:
    # Two kills of an at-least-once member: one landing between a commit and the next batch (a
    # window of about 0.1 s in each 2 s commit interval) redelivers nothing.
    outcome = chaos_run("consumer-crash", duration_s=60)
    assert outcome.exit_code == 0, outcome.expectations
    at_least_once, at_most_once = outcome.result["groups"]["g-alo"], outcome.result["groups"]["g-amo"]
    assert at_least_once["skipped"] == 0 and at_least_once["poll_skips"] == 0
    assert at_least_once["redelivered"] > 0, at_least_once  # what it processed since its last commit
    redelivery = at_least_once["anomalies"]["redelivery"]["examples"][0]
    assert isinstance(redelivery["coordinator"], int)  # the leader of g-alo's offsets partition then
    assert at_most_once["redelivered"] == 0
    assert at_least_once["polled"] >= outcome.result["acks"]["all"]["acked"]  # it read everything
    events = consumes(outcome.rundir.root)
    killed = {e["process"] for e in events if e["type"] == "stop" and e["reason"] == "killed"}
    assert killed and killed <= {f"g-{mode}-{n}" for mode in ("alo", "amo") for n in range(3)}
    for member in killed:  # started again at heal, and given partitions again
        starts = [e["time_ns"] for e in events if e["type"] == "start" and e["process"] == member]
        assert len(starts) >= 2, member
    run = json.loads((outcome.rundir.root / "run.json").read_text())
    assert run["offsets_topic"]["replication_factor"] == 3
    assert outcome.report is not None and 'id="consumer-groups"' in outcome.report.read_text()


MEMBER_FAULTS = """
name: member-faults
duration_s: 47
cluster:
  brokers: 3
  broker_config: {min.insync.replicas: 2, unclean.leader.election.enable: false}
workload:
  acks: [all]
  groups:
    - {name: g-alo, commit: after-process, members: 2, commit_interval_s: 1}
    - {name: g-amo, commit: before-process, members: 2, processing_ms: 5}
    - {name: g-auto, commit: auto, members: 1}
    - {name: g-async, commit: after-process, commit_async: true, members: 1}
faults:
  mode: schedule
  schedule:  # the freeze must find g-alo-0 assigned: in one CI run the groups took 13 s to form
    - {after: {event: group-stable, delay_s: 2}, duration_s: 12, fault: freeze-member,
       params: {member: g-alo-0}}
    - {after: {event: start, delay_s: 2}, duration_s: 5, fault: leave-member, params: {member: g-amo-1}}
    - {after: {event: start, delay_s: 13}, duration_s: 4, fault: kill-member,
       params: {group: g-amo, member: all}}
"""


def test_a_zombie_a_leaver_and_a_killed_group_are_each_recorded_and_judged(
    chaos_run: ChaosRun, tmp_path: Path
) -> None:
    scenario = tmp_path / "member-faults.yaml"
    scenario.write_text(MEMBER_FAULTS)
    outcome = chaos_run(str(scenario))
    faults = [
        json.loads(line) for line in (outcome.rundir.root / "history/faults.jsonl").read_text().splitlines()
    ]
    window = {(f["fault"], f["phase"]): f["time_ns"] for f in faults}
    events = consumes(outcome.rundir.root)

    # The first step waited for every group to form: each member was assigned before it was seen.
    waited = next(f["detail"] for f in faults if f["fault"] == "freeze-member" and f["phase"] == "start")
    assert waited["waited_for"] == "group-stable, then 2 s" and "error" not in waited, waited
    assigned = {e["process"] for e in events if e["type"] == "assign" and e["time_ns"] <= waited["seen_ns"]}
    assert assigned == {"g-alo-0", "g-alo-1", "g-amo-0", "g-amo-1", "g-auto-0", "g-async-0"}, assigned

    # The frozen member does nothing while frozen (the stop is recorded just after the thaw). It
    # wakes as a zombie: its session expired after 6 s, so whatever it still processes before its
    # revoke, the partition's new owner processes too (redelivered), and whatever it commits then is
    # refused (the coordinator fences its old generation). Then it rejoins in a newer generation.
    frozen, thawed = window[("freeze-member", "start")], window[("freeze-member", "stop")]
    zombie = [e for e in events if e["process"] == "g-alo-0"]
    assert not [e for e in zombie if frozen + S // 10 < e["time_ns"] < thawed - S // 10]
    before = [e["generation"] for e in zombie if e["type"] == "assign" and e["time_ns"] < frozen]
    after = [e["generation"] for e in zombie if e["type"] == "assign" and e["time_ns"] > thawed]
    assert before and after and after[0] > before[-1], (before, after)
    rejoined = next(e["time_ns"] for e in zombie if e["type"] == "assign" and e["time_ns"] > thawed)
    awake = [e for e in zombie if thawed - S // 10 < e["time_ns"] < rejoined]
    # Commits it sent awake: one in flight when it froze was answered in time, and completes (ok)
    # only as it wakes.
    sent_awake = {e["commit_id"] for e in awake if e["type"] == "commit" and e["phase"] == "invoke"}
    commits = [
        e["phase"]
        for e in awake
        if e["type"] == "commit" and e["phase"] != "invoke" and e["commit_id"] in sent_awake
    ]
    assert "ok" not in commits, commits
    redone = {(e["partition"], e["offset"]) for e in awake if e["type"] == "poll"}
    others = {
        (e["partition"], e["offset"]) for e in events if e["type"] == "poll" and e["process"] == "g-alo-1"
    }
    assert redone <= others
    print(
        f"the zombie processed {len(redone)} records after its session expired; its commits then: {commits}"
    )

    # The member that left cleanly said so, and came back at heal.
    leaver = [(e["type"], e.get("reason")) for e in events if e["process"] == "g-amo-1"]
    assert ("stop", "closed") in leaver and leaver.count(("start", None)) == 3  # then killed, too

    # Every member of the at-most-once group killed at once, and each started again.
    for member in ("g-amo-0", "g-amo-1"):
        mine = [e for e in events if e["process"] == member]
        assert ("stop", "killed") in [(e["type"], e.get("reason")) for e in mine]
    groups = outcome.result["groups"]
    assert groups["g-alo"]["skipped"] == 0 and groups["g-amo"]["redelivered"] == 0
    verdicts = {g["id"]: g["verdict"] for g in groups["g-amo"]["guarantees"]}
    assert verdicts["no-consumer-skips"] == "not-promised" and verdicts["no-redeliveries"] == "held"
    print("at-most-once skipped after the group was killed:", groups["g-amo"]["skipped"])

    # Untouched by faults, the auto-committing and the asynchronous group kept up and had their
    # commits answered (auto commits are recorded as librdkafka reports them done).
    acked = outcome.result["acks"]["all"]["acked"]
    for name in ("g-auto", "g-async"):
        assert groups[name]["polled"] > acked // 2 and groups[name]["skipped"] == 0, groups[name]
        assert groups[name]["commits"]["ok"] > 0, groups[name]["commits"]


def test_at_most_once_skips_what_a_crash_cuts_short_and_says_it_was_not_promised(chaos_run: ChaosRun) -> None:
    outcome = chaos_run("at-most-once-crash", duration_s=30)
    group = outcome.result["groups"]["g-amo"]
    assert group["skipped"] > 0 and group["redelivered"] == 0, group
    verdicts = {g["id"]: g["verdict"] for g in group["guarantees"]}
    assert verdicts == {
        "no-consumer-skips": "not-promised",
        "no-redeliveries": "held",
        "monotonic-polls": "held",
        "commits-advance": "held",
    }
    example = group["anomalies"]["consumer-skip"]["examples"][0]
    assert example["committed"] > example["offset"] and example["committed_by"].startswith("g-amo-")


def test_the_coordinator_is_found_from_live_state_killed_and_isolated(chaos_run: ChaosRun) -> None:
    outcome = chaos_run("coordinator-failover", duration_s=45)  # room for both faults of the seed
    root = outcome.rundir.root
    starts = [
        json.loads(line)
        for line in (root / "history/faults.jsonl").read_text().splitlines()
        if json.loads(line)["phase"] == "start"
    ]
    assert [s["fault"] for s in starts] == ["kill", "partition"]
    for start in starts:  # the leader of g-alo's offsets partition, as ZooKeeper had it
        assert start["detail"]["group"] == "g-alo" and start["detail"]["coordinator_partition"] == 4
        assert len(start["targets"]) == 1 and start["targets"][0].startswith("kafka-")
    group = outcome.result["groups"]["g-alo"]
    assert group["skipped"] == 0 and group["commit_regressions"] == 0, group
    assert group["commits"]["ok"] > 0
    refused = [e for e in consumes(root) if e["type"] == "commit" and e["phase"] in ("fail", "info")]
    print("commits refused or unknown while the coordinator moved:", [e.get("error") for e in refused])
