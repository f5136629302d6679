"""The report shows what applies: the guarantees as one matrix (a row per guarantee, a column per
topic or group), scorecard columns only for the kinds that apply, `not-exercised` apart from `held`,
and the read_uncommitted group as the control of `no-aborted-reads`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from report_runs import ABORTED_APPENDED, TXN_GROUPS, TXN_RUN_TOPICS
from reportpage import Element, Page, parse

from contract.anomaly_kinds import GROUP_KINDS, KINDS, TRANSACTION_KIND_COUNTS, WRITE_COUNTS
from contract.checked_run import Exercised, Verdict
from reports import write_report
from reports.guarantee_matrix import Cell


def render(run_dir: Path) -> tuple[Page, dict[str, Any]]:
    page = parse(write_report(run_dir).read_text(encoding="utf-8"))
    return page, json.loads((run_dir / "check/result.json").read_text())


def cell_text(page: Page, **attrs: str) -> str:
    (cell,) = page.find("details", "verdict-cell", **attrs)
    return " ".join("".join(cell.text).split())


def inside(page: Page, outer: Element, tag: str, cls: str) -> list[Element]:
    """The elements `tag`.`cls` after `outer` and before the next element of `outer`'s tag."""
    start = page.elements.index(outer) + 1
    end = next((i for i in range(start, len(page.elements)) if page.elements[i].tag == outer.tag), None)
    return [el for el in page.elements[start:end] if el.tag == tag and cls in el.classes]


def test_a_row_per_guarantee_and_a_column_per_topic_then_group(transaction_run: Path) -> None:
    page, result = render(transaction_run)
    heads = [(th.attrs["data-family"], th.attrs["data-where"]) for th in page.find("th", "where")]
    assert heads == [("topic", t["name"]) for t in TXN_RUN_TOPICS] + [("group", g) for g in TXN_GROUPS]
    groups = result["groups"]
    every = [(g["id"], g["topic"]) for g in result["guarantees"]]
    every += [(g["id"], name) for name, group in groups.items() for g in group["guarantees"]]
    rows = [r.attrs["data-id"] for r in page.find("tr", "guarantee-row")]
    assert sorted(rows) == sorted({gid for gid, _ in every})  # each guarantee once: 17 rows, not 46
    cells = [(c.attrs["data-id"], c.attrs["data-where"]) for c in page.find("details", "verdict-cell")]
    assert sorted(cells) == sorted(every)
    for row in page.find("tr", "guarantee-row"):  # each cell in its row, under its column
        slots = inside(page, row, "td", "slot")
        assert len(slots) == len(heads)
        for slot, (_, where) in zip(slots, heads, strict=True):
            for cell in inside(page, slot, "details", "verdict-cell"):
                assert (cell.attrs["data-id"], cell.attrs["data-where"]) == (row.attrs["data-id"], where)


def test_each_cell_says_its_verdict_count_and_cases_and_why_without_script(transaction_run: Path) -> None:
    page, result = render(transaction_run)
    (row,) = [g for g in result["guarantees"] if (g["id"], g["topic"]) == ("no-aborted-reads", "chaos-txn-0")]
    cell = page.find("details", "verdict-cell", data_id="no-aborted-reads", data_where="chaos-txn-0")[0]
    assert (cell.attrs["data-verdict"], cell.attrs["data-found"], cell.attrs["data-exercised"]) == (
        "held",
        "0",
        "100",
    )
    text = cell_text(page, data_id="no-aborted-reads", data_where="chaos-txn-0")
    assert text.startswith("held 0 of 100")  # the verdict and count, in the summary a keyboard opens
    assert "judged over 100 appended records of aborted transactions" in text
    assert row["reason"] in text and "Promised by" not in text  # the handwritten row names nobody
    tips = [el.attrs.get("title", "") for el in page.elements if el.tag == "summary"]
    assert any(row["reason"] in tip and "judged over 100" in tip for tip in tips)  # on hover too


def test_not_exercised_is_neither_held_nor_broken(plain_run: Path) -> None:
    page, _ = render(plain_run)
    assert page.find("section", id="verdict")[0].attrs["data-passed"] == "true"
    for topic in ("chaos-acks-all", "chaos-acks-1"):
        (cell,) = page.find("details", "verdict-cell", data_id="no-phantom-writes", data_where=topic)
        assert cell.attrs["data-verdict"] == "not-exercised"
        badges = [b for b in inside(page, cell, "span", "badge")]
        assert [b.classes for b in badges] == [{"badge", "v-not-exercised"}]
        text = cell_text(page, data_id="no-phantom-writes", data_where=topic)
        assert text.startswith("not exercised 0 of 0")
        assert "not exercised: 0 writes that failed definitely" in text
    listed = [
        (li.attrs["data-id"], li.attrs["data-where"]) for li in page.find("li", data_verdict="not-exercised")
    ]
    assert listed == [("no-phantom-writes", "chaos-acks-all"), ("no-phantom-writes", "chaos-acks-1")]
    assert page.find("ul", id="broke") == []
    assert "held where the run exercised it" in "".join(page.find("section", id="verdict")[0].text)
    held = cell_text(page, data_id="no-lost-acked-writes", data_where="chaos-acks-all")
    assert "judged over 1,990 acknowledged writes" in held


def test_a_result_without_cases_shows_counts_alone(passing_run: Path) -> None:
    page, _ = render(passing_run)  # written before `exercised` was
    text = cell_text(page, data_id="no-lost-acked-writes", data_where="chaos-acks-all")
    assert text.startswith("held 0 found") and "judged over" not in text
    assert all(c.attrs["data-exercised"] == "" for c in page.find("details", "verdict-cell"))


def test_a_guarantee_of_the_whole_run_spans_the_topic_columns(failing_run: Path) -> None:
    page, _ = render(failing_run)  # no-unexpected-values without a topic, as older results have it
    (row,) = page.find("tr", "guarantee-row", data_id="no-unexpected-values")
    slots = inside(page, row, "td", "slot")
    topics = len(page.find("th", "where", data_family="topic"))
    assert [s.attrs.get("colspan") for s in slots] == [str(topics), None]  # the topics', then g-alo's
    assert cell_text(page, data_id="no-unexpected-values", data_where="").startswith("violated 2 found")


def test_the_read_uncommitted_group_is_the_control_of_no_aborted_reads(transaction_run: Path) -> None:
    page, _ = render(transaction_run)
    (control,) = page.find("p", "control")
    assert (control.attrs["data-group"], control.attrs["data-polled"]) == ("g-ru", "57")
    assert control.attrs["data-appended"] == str(ABORTED_APPENDED)
    assert " ".join("".join(control.text).split()) == (
        "Control of no-aborted-reads: The read_uncommitted group g-ru polled 57 of 148 appended aborted "
        "records: they were there to be seen."
    )


def test_a_control_that_saw_nothing_says_so(transaction_run: Path) -> None:
    path = transaction_run / "check/result.json"
    result = json.loads(path.read_text())
    result["groups"]["g-ru"]["aborted_polled"] = 0
    path.write_text(json.dumps(result))
    page, _ = render(transaction_run)
    assert "polled 0 of 148 appended aborted records: the control saw none of them" in "".join(
        page.find("p", "control")[0].text
    )


def scorecard_counts(page: Page) -> set[str]:
    return {r.attrs["data-count"] for r in page.find("tr", "count-row")}


def group_counts(page: Page) -> set[str]:
    return {
        c.attrs["data-count"]
        for c in page.find("td")
        if "data-count" in c.attrs and "data-acks" not in c.attrs
    }


def test_a_plain_run_shows_no_transaction_or_group_columns(plain_run: Path) -> None:
    page, result = render(plain_run)
    judged = {g["id"] for g in result["guarantees"]}
    expected = {*WRITE_COUNTS, *(k.count for k in KINDS if k.per_acks and k.guarantee in judged)}
    assert scorecard_counts(page) == expected and not expected & TRANSACTION_KIND_COUNTS
    assert "reordered" in expected and "replica_divergent" not in expected  # no replicas were read
    assert page.find("section", id="consumer-groups") == [] and not page.find(
        "th", "where", data_family="group"
    )
    assert page.find("section", id="transactions") == []


def test_a_transaction_run_shows_what_its_topics_and_groups_promise(transaction_run: Path) -> None:
    page, _ = render(transaction_run)
    shown = scorecard_counts(page)
    assert {"lost_committed", "aborted_read", "torn_transactions", "pipeline_skipped"} <= shown
    assert "phantom" in shown and "replica_divergent" not in shown
    assert group_counts(page) == {"polled", *(k.count for k in GROUP_KINDS)}  # uncommitted_read applies
    # The control's uncommitted reads break no promise of its own: not marked.
    bad = {(c.attrs["data-count"], c.attrs["data-value"]) for c in page.find("td", "bad")}
    assert ("uncommitted_read", "57") not in bad and ("redelivered", "12") not in bad


def test_group_columns_only_for_the_kinds_the_groups_are_judged_on(failing_run: Path) -> None:
    page, _ = render(failing_run)  # g-alo is judged on no-consumer-skips alone
    # redelivered decides no guarantee of it, but counted 40: what was found is never hidden.
    assert group_counts(page) == {"polled", "skipped", "poll_skips", "redelivered"}


def test_a_kind_that_found_something_is_shown_where_it_does_not_apply(plain_run: Path) -> None:
    path = plain_run / "check/result.json"
    result = json.loads(path.read_text())
    result["acks"]["all"]["lost_committed"] = 1  # no guarantee of the run is decided by it
    path.write_text(json.dumps(result))
    page, _ = render(plain_run)
    assert "lost_committed" in scorecard_counts(page) and "aborted_read" not in scorecard_counts(page)


def test_a_cell_of_two_kinds_counts_each_kind_not_their_sum() -> None:
    # A write truncated and replaced is both lost and overwritten at its offset: 307 and 307 are not
    # 614 broken writes (a 0.9.0.1 hw-truncation report said "614 of 810,333").
    verdict = Verdict(
        "no-lost-acked-writes",
        "chaos-acks-all",
        "all",
        "",
        True,
        "violated",
        "",
        "",
        Exercised(810_333, "writes"),
    )
    both = Cell(verdict, "chaos-acks-all", "topic", 614, (("lost", 307), ("divergent", 307)))
    assert both.tally == "307 lost, 307 divergent of 810,333"
    one = Cell(verdict, "chaos-acks-all", "topic", 307, (("lost", 307),))
    assert one.tally == "307 of 810,333"
