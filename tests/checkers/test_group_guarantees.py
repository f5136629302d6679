"""What each commit mode promises, and what withdraws a promise (pure: run.json and counts in)."""

from __future__ import annotations

from typing import Any

from checker_rundirs import run_json

from checkers.group_guarantees import exercised, group_guarantees
from checkers.guarantees import on_complete_reads

CLEAN = {"skipped": 0, "poll_skips": 0, "redelivered": 3, "nonmonotonic": 0, "commit_regressions": 0}


def promised(run: dict[str, Any], group: dict[str, Any], faults: tuple[str, ...] = ()) -> dict[str, bool]:
    return {row["id"]: row["promised"] for row in group_guarantees(run, group, CLEAN, faults)}


def group(commit: str, **extra: Any) -> dict[str, Any]:
    return {"name": "g", "topics": ["t-all"], "commit": commit, "members": 2, **extra}


def test_each_commit_mode_promises_its_own() -> None:
    run = run_json()
    assert promised(run, group("after-process")) == {
        "no-consumer-skips": True,
        "no-redeliveries": False,
        "monotonic-polls": True,
        "commits-advance": True,
    }
    assert promised(run, group("after-process", commit_async=True))["commits-advance"] is False
    assert promised(run, group("before-process")) == {
        "no-consumer-skips": False,
        "no-redeliveries": True,
        "monotonic-polls": True,
        "commits-advance": True,
    }
    assert promised(run, group("auto")) == {
        "no-consumer-skips": False,
        "no-redeliveries": False,
        "monotonic-polls": True,
        "commits-advance": False,
    }


def test_logs_that_may_be_cut_withdraw_the_position_and_commit_promises() -> None:
    unclean = run_json(cluster={"brokers": 3, "broker_config": {"unclean.leader.election.enable": "true"}})
    rows = {r["id"]: r for r in group_guarantees(unclean, group("after-process"), CLEAN)}
    assert not rows["no-consumer-skips"]["promised"] and not rows["monotonic-polls"]["promised"]
    assert rows["no-consumer-skips"]["reason"].startswith("unclean leader election is enabled on t-all")
    # A member whose position falls past a cut log's end resets it and commits lower, in the same
    # generation: seen in a real unclean-election run (docs/FINDINGS.md).
    assert not rows["commits-advance"]["promised"]
    assert rows["commits-advance"]["reason"].startswith("unclean leader election is enabled on t-all")
    assert not promised(run_json(), group("after-process"), ("t-all",))["no-consumer-skips"]


def test_reasons_name_a_thin_offsets_topic_and_the_undetectable_truncation() -> None:
    run = run_json(offsets_topic={"partitions": 50, "replication_factor": 1})
    rows = group_guarantees(run, group("after-process"), {**CLEAN, "skipped": 2})
    skips = next(r for r in rows if r["id"] == "no-consumer-skips")
    assert skips["verdict"] == "violated"
    assert "__consumer_offsets has 1 replica(s) of 3 brokers" in skips["reason"]
    assert "KIP-115" in skips["reason"] and "KIP-320" in skips["reason"]
    modern = run_json(kafka={"version": "2.8.1"}, offsets_topic={"partitions": 50, "replication_factor": 3})
    assert "KIP" not in next(r for r in group_guarantees(modern, group("after-process"), CLEAN))["reason"]


def test_an_incomplete_final_read_leaves_what_held_unknown_and_what_broke_broken() -> None:
    counts = {**CLEAN, "nonmonotonic": 1}
    rows = group_guarantees(run_json(), group("after-process"), counts)
    assert on_complete_reads(rows, []) == rows
    judged = {r["id"]: r for r in on_complete_reads(rows, ["t-all partition 1"])}
    assert {gid: r["verdict"] for gid, r in judged.items()} == {
        "no-consumer-skips": "unknown",  # 0 skips counted over the complete partitions only
        "no-redeliveries": "not-promised",
        "monotonic-polls": "violated",  # found: it stands
        "commits-advance": "unknown",
    }
    assert judged["no-consumer-skips"]["reason"].endswith(
        "; the final read of t-all partition 1 is incomplete, so records there were not counted"
    )


def test_a_group_guarantee_over_no_cases_is_not_exercised_and_an_incomplete_read_makes_it_unknown() -> None:
    topics = [{"name": "t-all", "partitions": 1, "acks": "all", "transactions": {"records": [1, 2]}}]
    run = run_json(kafka={"version": "3.9.2"}, topics=topics)
    reader = group("after-process", config={"isolation.level": "read_committed"})
    counts = {**CLEAN, "uncommitted_read": 0, "polled": 40, "committed_positions": 0}
    entry = {**counts, "commits": {"invoke": 0, "ok": 0, "fail": 0, "info": 0}, "aborted_appended": 0}
    rows = {r["id"]: r for r in exercised(group_guarantees(run, reader, counts), entry)}
    assert {gid: (r["verdict"], r["exercised"]["count"]) for gid, r in rows.items()} == {
        "no-consumer-skips": ("not-exercised", 0),  # it committed nothing: nothing could be skipped
        "no-redeliveries": ("not-promised", 40),
        "monotonic-polls": ("held", 40),
        "commits-advance": ("not-exercised", 0),
        "no-uncommitted-reads": ("not-exercised", 0),  # no aborted record in the log to be handed out
    }
    assert rows["no-uncommitted-reads"]["reason"].endswith(
        "not exercised: no appended records of aborted transactions on its topics"
    )
    unread = {r["id"]: r["verdict"] for r in on_complete_reads(list(rows.values()), ["t-all partition 0"])}
    assert unread["no-consumer-skips"] == "unknown" and unread["monotonic-polls"] == "unknown"
