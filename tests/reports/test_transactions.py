"""The report of a run with transactional producers: the Transactions section, each transactional.id's
coordinator on the cluster timeline, the transaction anomalies' examples, and the index's trend of
lost committed records."""

from __future__ import annotations

import json
from pathlib import Path

from report_runs import TRANSACTIONS, TXN_COORDINATORS, add_transactions, make_failing, make_passing
from reportpage import Element, Page, parse

from reports import write_index, write_report


def render(run_dir: Path) -> Page:
    return parse(write_report(run_dir).read_text(encoding="utf-8"))


def lane_tips(page: Page, name: str) -> list[str]:
    """The tooltips of the segments drawn in the cluster lane `name`, in order."""
    start = page.elements.index(page.find("g", "lane", data_lane=name)[0])
    lane: list[Element] = []
    for el in page.elements[start + 1 :]:
        if el.tag == "g":
            break
        lane.append(el)
    return [el.attrs["data-tip"] for el in lane if el.tag == "rect"]


def test_the_section_shows_each_transactional_ids_counts_and_sentence(transactional_run: Path) -> None:
    page = render(transactional_run)
    (section,) = page.find("section", id="transactions")
    rows = page.find("tr", "txn-score")
    assert [r.attrs["data-transactional-id"] for r in rows] == ["kchaos-tx-0", "kchaos-tx-1"]
    after = page.elements[page.elements.index(section) :]
    for row in TRANSACTIONS:
        tr = page.find("tr", "txn-score", data_transactional_id=row["transactional_id"])[0]
        cells = after[after.index(tr) + 1 :][:9]
        shown = {c.attrs["data-txn-count"]: int(c.attrs["data-value"]) for c in cells if c.tag == "td"}
        assert shown == {k: v for k, v in row.items() if k != "transactional_id"}
    sentences = {p.attrs["data-transactional-id"]: "".join(p.text) for p in page.find("p", "txn-sentence")}
    assert sentences == {
        "kchaos-tx-0": "kchaos-tx-0 began 73 transactions: 60 committed, 13 aborted, 0 unknown; of the "
        "13 not committed, 0 ended in a fatal error, 0 in an abortable one and 0 in a retriable one; "
        "the other 13 had no failed step.",
        "kchaos-tx-1": "kchaos-tx-1 began 1,210 transactions: 1,200 committed, 6 aborted, 4 unknown; of "
        "the 10 not committed, 1 ended in a fatal error, 3 in an abortable one and 4 in a retriable one; "
        "the other 2 had no failed step.",
    }
    assert "an abort of it returned ok, or its producer's next init fenced it" in "".join(section.text)


def test_each_transactional_id_has_a_lane_following_its_coordinator(transactional_run: Path) -> None:
    page = render(transactional_run)
    lanes = [lane.attrs["data-lane"] for lane in page.find("g", "lane")]
    assert [n for n in lanes if n.endswith(" coordinator")] == [
        "kchaos-tx-0 coordinator",
        "kchaos-tx-1 coordinator",
    ]
    assert not [n for n in lanes if n.startswith("__transaction_state")]
    moved, stayed = (f"__transaction_state/{TXN_COORDINATORS[t]}" for t in ("kchaos-tx-0", "kchaos-tx-1"))
    assert lane_tips(page, "kchaos-tx-0 coordinator") == [
        f"{moved}: leader broker 1, leader epoch 1",
        f"{moved}: leader broker 2, leader epoch 2",
    ]
    assert lane_tips(page, "kchaos-tx-1 coordinator") == [f"{stayed}: leader broker 3, leader epoch 0"]


def test_the_transaction_anomalies_show_their_own_columns(transactional_run: Path) -> None:
    page = render(transactional_run)
    result = json.loads((transactional_run / "check/result.json").read_text())
    counts = {d.attrs["data-kind"]: d.attrs["data-count"] for d in page.find("details", "anomaly-group")}
    assert {k: counts[k] for k in ("lost-committed", "aborted-read", "torn-transaction")} == dict.fromkeys(
        ("lost-committed", "aborted-read", "torn-transaction"), "1"
    )
    (table,) = page.find("table", id="anomalies-torn-transaction")
    after = page.elements[page.elements.index(table) :]
    heads = ["".join(th.text) for th in after if th.tag == "th"][:8]
    assert heads == ["topic", "partition", "value", "process", "txn", "records", "found", "missing"]
    (example,) = result["anomalies"]["torn-transaction"]["examples"]
    cells = ["".join(td.text) for td in after if td.tag == "td"][:8]
    assert cells == [str(example[h]) for h in heads]


def test_a_run_without_transactions_has_no_section(passing_run: Path) -> None:
    page = render(passing_run)
    assert page.find("section", id="transactions") == []
    assert not [g for g in page.find("g", "lane") if g.attrs["data-lane"].endswith(" coordinator")]


def test_transactions_none_begun_says_so(passing_run: Path) -> None:
    path = passing_run / "check/result.json"
    path.write_text(json.dumps(json.loads(path.read_text()) | {"transactions": []}))
    page = render(passing_run)
    (section,) = page.find("section", id="transactions")
    assert page.find("tr", "txn-score") == [] and "No transaction was begun." in "".join(section.text)


def test_the_index_charts_lost_committed_records_only_for_scenarios_with_transactions(
    tmp_path: Path,
) -> None:
    runs = tmp_path / "runs"
    add_transactions(make_failing(runs / "n1-txn", scenario="txn-leader-kill"))
    make_passing(runs / "n1-leader-kill")
    page = parse(write_index(runs).read_text(encoding="utf-8"))
    titles = {
        scenario: [svg.attrs["aria-label"] for svg in trends]
        for scenario, trends in page.per_scenario("svg", "trend").items()
    }
    assert "lost committed records" in titles["txn-leader-kill"]
    assert "lost writes" in titles["leader-kill"] and "lost committed records" not in titles["leader-kill"]
