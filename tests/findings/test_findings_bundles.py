"""The findings' evidence bundles (docs/findings/<id>/) and the tables made of them: the repository's
own bundles read under the current contract, and FINDINGS.md and README.md agree with them (the
check `make test` makes); then the pieces that check rests on, on handwritten run directories."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from contract.errors import ConfigError, HarnessError
from kchaos.cli import main
from kchaos.finding_bundles import (
    COUNTS,
    QUOTES,
    bundle_runs,
    load_bundle,
    load_bundles,
    read_finding,
    stripped,
)
from kchaos.finding_counts import CountSpec, Measured, compact, parse_path, pick, seeds_text, sentence
from kchaos.finding_tables import anchor, check_documents, disagreements, replace_blocks, write_documents

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "reports"))
from report_runs import make_failing, make_passing  # noqa: E402

FINDING_YAML = """\
title: A thing broke
section: a-thing-broke
whose: Kafka's
order: 1
counts:
  - {say: "acks=all lost", count: acks.all.lost, of: acks.all.acked}
readme: a thing broke
matrix: {column: "`leader-kill`", order: 1, acks: all, verdicts: [no-lost-acked-writes]}
"""
FINDINGS_MD = """\
# Findings

<!-- findings:summary -->
<!-- /findings:summary -->

<!-- findings:matrix -->
<!-- /findings:matrix -->

## A thing broke

<!-- findings:runs:thing -->
<!-- /findings:runs:thing -->
"""
README_MD = "# kafka-chaos\n\n<!-- findings:readme -->\n<!-- /findings:readme -->\n"


def test_the_repository_findings_read_and_agree_with_findings_and_readme() -> None:
    bundles = load_bundles(ROOT / "docs" / "findings")
    assert bundles, "docs/findings holds no bundle"
    assert check_documents(bundles, ROOT / "docs" / "FINDINGS.md", ROOT / "README.md") == []


def spec(say: str = "lost", of: str | None = "acks.all.acked") -> CountSpec:
    return CountSpec(say, parse_path("acks.all.lost", "t"), parse_path(of, "t") if of else None, None)


def test_a_count_path_sums_what_it_reaches_and_is_none_where_it_reaches_nothing() -> None:
    result = {
        "acks": {"all": {"lost": 3, "acked": 10}},
        "groups": {"a": {"skipped": 2}, "b": {"skipped": 5}},
        "transactions": [
            {"transactional_id": "tx-0", "fatal_errors": 1},
            {"transactional_id": "tx-1", "fatal_errors": 4},
        ],
    }
    assert pick(result, parse_path("acks.all.lost", "t")) == 3
    assert pick(result, parse_path("groups.*.skipped", "t")) == 7
    assert pick(result, parse_path("transactions[*].fatal_errors", "t")) == 5
    assert pick(result, parse_path("transactions[transactional_id=tx-1].fatal_errors", "t")) == 4
    assert pick(result, parse_path("acks.1.lost", "t")) is None
    assert pick(result, parse_path("transactions.#", "t")) == 2
    run = {"workload": {"killed": [{"process": "pipe-0"}]}}
    assert pick(result, parse_path("run.workload.killed.#", "t"), run) == 1
    with pytest.raises(ConfigError, match=r"finding.yaml: counts\[0\]: 'acks..lost' is not a count path"):
        parse_path("acks..lost", "finding.yaml: counts[0]")


def test_seeds_are_said_as_ranges_with_repeats_counted() -> None:
    assert seeds_text([1]) == "seed 1"
    assert seeds_text([3, 1, 2, 4, 5]) == "seeds 1-5"
    assert seeds_text([0, 2]) == "seeds 0, 2"
    assert seeds_text([1, 1, 2, 3, 4, 5]) == "seeds 1 (twice), 2-5"


def test_a_none_found_says_over_how_much_and_how_many_runs_and_a_hit_names_its_seeds() -> None:
    clean = [Measured("3.9.2", s, 0, 900_000 + s) for s in range(1, 6)]
    assert sentence(spec("acks=all lost"), clean) == "acks=all lost 0 of 4,500,015 (5 runs, seeds 1-5)"
    broke = [Measured("0.9.0.1", 1, 22, 907_237), Measured("0.9.0.1", 2, 0, 800_000)]
    assert sentence(spec("acks=all lost"), broke) == (
        "acks=all lost in 1 of 2 runs (seeds 1, 2): 22 of 907,237 (seed 1)"
    )
    both = sentence(spec("acks=all lost"), broke + clean)
    assert both.startswith("0.9.0.1: acks=all lost in 1 of 2 runs") and "; 3.9.2: acks=all lost 0 of" in both
    assert compact(spec("lost"), broke + clean) == "lost in 1 of 2 runs on 0.9.0.1; 0 in 5 runs on 3.9.2"
    assert (
        sentence(spec("skipped", of=None), [Measured("0.9.0.1", 0, 115, None)])
        == "skipped 115 (1 run, seed 0)"
    )


def test_a_stripped_result_keeps_every_count_and_verdict_and_says_its_examples_were_dropped(
    tmp_path: Path,
) -> None:
    run = make_failing(tmp_path / "run-failing")
    result = json.loads((run / "check/result.json").read_text())
    out = stripped(result)
    assert out["acks"] == result["acks"] and out["guarantees"] == result["guarantees"]
    lost = out["anomalies"]["lost-write"]
    assert lost["examples"] == [] and lost["examples_capped"] is True and lost["count"] > 0
    assert out["anomalies"]["unexpected-value"]["examples_capped"] is False  # had none to drop
    assert out["availability"]["series"] == [] and result["availability"]["series"]


def make_bundle(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    root = tmp_path / "findings"
    (root / "thing").mkdir(parents=True)
    (root / "thing" / "finding.yaml").write_text(FINDING_YAML)
    findings, readme = tmp_path / "FINDINGS.md", tmp_path / "README.md"
    findings.write_text(FINDINGS_MD)
    readme.write_text(README_MD)
    run = make_failing(tmp_path / "runs" / "20261121-020000-leader-kill-aaaa")
    (run / "logs").mkdir()
    (run / "logs" / "kafka-1.log").write_text("one\nTruncating log chaos-acks-all-0 to offset 7.\nthree\n")
    return root, findings, readme, run


def test_a_bundle_made_from_a_run_reads_back_and_makes_every_table(tmp_path: Path) -> None:
    root, findings, readme, run = make_bundle(tmp_path)
    ids = bundle_runs([run], root / "thing", [f"{run}/logs/kafka-1.log:2"])
    assert ids == [run.name]
    bundle = load_bundle(root / "thing")
    assert [r.run_id for r in bundle.runs] == [run.name]
    quote = json.loads((root / "thing" / QUOTES).read_text())
    assert quote == {"run": run.name, "file": "logs/kafka-1.log", "line": 2, "text": quote["text"]}
    assert quote["text"].startswith("Truncating log")
    assert check_documents([bundle], findings, readme)  # the blocks are still empty
    write_documents([bundle], findings, readme)
    assert check_documents([bundle], findings, readme) == []
    text = findings.read_text()
    lost = bundle.runs[0].result["acks"]["all"]["lost"]
    assert f"acks=all lost {lost:,} of" in text and "(1 run, seed 7)" in text
    assert "| 0.9.0.1 | ZooKeeper |" in text  # the matrix's row
    assert "kchaos run leader-kill --kafka 0.9.0.1 --seed 7" in (root / "thing" / COUNTS).read_text()
    assert "[a thing broke](docs/FINDINGS.md#a-thing-broke)" in readme.read_text()


def test_a_number_typed_over_a_generated_one_is_named_with_its_line(tmp_path: Path) -> None:
    root, findings, readme, run = make_bundle(tmp_path)
    bundle_runs([run], root / "thing", [])
    bundle = load_bundle(root / "thing")
    write_documents([bundle], findings, readme)
    lost = bundle.runs[0].result["acks"]["all"]["lost"]
    text = findings.read_text()
    findings.write_text(text.replace(f"acks=all lost {lost:,} of", "acks=all lost 22 of", 1))
    problems = check_documents([bundle], findings, readme)
    assert len(problems) == 1
    assert problems[0].startswith(f"{findings}:6: block findings:summary is not what the bundles make")
    assert f"acks=all lost {lost:,} of" in problems[0]


def test_the_cli_bundles_checks_and_exits_2_on_a_disagreement(tmp_path: Path) -> None:
    root, findings, readme, run = make_bundle(tmp_path)
    where = ["--root", str(root), "--findings", str(findings), "--readme", str(readme)]
    assert main(["findings", "bundle", str(run), "--id", "thing", *where]) == 0
    assert main(["findings", "check", *where]) == 0
    (root / "thing" / COUNTS).write_text("edited by hand\n")
    assert main(["findings", "check", *where]) == 2
    assert main(["findings", "tables", "--write", *where]) == 0
    assert main(["findings", "check", *where]) == 0


def test_bad_bundles_are_errors_naming_the_file_and_field(tmp_path: Path) -> None:
    root, _, _, run = make_bundle(tmp_path)
    finding = root / "thing" / "finding.yaml"
    finding.write_text(FINDING_YAML + "colour: red\n")
    with pytest.raises(ConfigError, match=r"finding.yaml: unknown key\(s\) colour"):
        read_finding(finding)
    finding.write_text(FINDING_YAML.replace("order: 1\n", ""))
    with pytest.raises(ConfigError, match=r"finding.yaml: `order` must be an integer"):
        read_finding(finding)
    finding.write_text(FINDING_YAML)
    with pytest.raises(ConfigError, match=r"--quote .*is not inside any of the runs"):
        bundle_runs([run], root / "thing", [f"{tmp_path}/elsewhere.log:1"])
    bundle_runs([run], root / "thing", [])
    result = root / "thing" / "evidence" / run.name / "check" / "result.json"
    result.write_text(result.read_text().replace('"result_format": 1', '"result_format": 99'))
    with pytest.raises(HarnessError, match=r"unknown result_format 99"):
        load_bundle(root / "thing")
    shutil.copytree(run, root / "thing" / "evidence" / "renamed", dirs_exist_ok=True)
    (root / "thing" / "evidence" / run.name).rename(tmp_path / "moved")
    with pytest.raises(ConfigError, match=r"a bundled run's directory is its run id"):
        load_bundle(root / "thing")


def test_markers_that_do_not_pair_are_an_error_and_other_blocks_are_kept() -> None:
    with pytest.raises(ConfigError, match=r"F.md: the markers of block findings:summary do not pair"):
        replace_blocks("<!-- findings:summary -->\nx\n", {}, "F.md")
    text = "<!-- findings:a -->\nold\n<!-- /findings:a -->\n<!-- findings:b -->\nkeep\n<!-- /findings:b -->\n"
    new = replace_blocks(text, {"a": "new\n"}, "F.md")
    assert "new\n" in new and "keep\n" in new and "old" not in new
    assert disagreements(new, {"a": "new\n"}, ["a", "c"], "F.md") == [
        "F.md: no block findings:c (add its markers)",
        "F.md: block findings:b names no bundle with runs",
    ]


def test_anchors_are_githubs() -> None:
    assert anchor("A double failover loses committed acks=all writes (KIP-101)") == (
        "a-double-failover-loses-committed-acksall-writes-kip-101"
    )
    assert anchor("Ours, fixed: `acks=1 lost == 0` passed") == "ours-fixed-acks1-lost--0-passed"


def test_a_passing_run_is_bundled_as_well_as_a_failing_one(tmp_path: Path) -> None:
    root, findings, readme, run = make_bundle(tmp_path)
    passing = make_passing(tmp_path / "runs" / "20261120-020000-leader-kill-bbbb")
    bundle_runs([run, passing], root / "thing", [])
    bundle = load_bundle(root / "thing")
    assert len(bundle.runs) == 2
    write_documents([bundle], findings, readme)
    assert "acks=all lost in 1 of 2 runs (seed 7 (twice))" in findings.read_text()
    assert "Seed 7 on 0.9.0.1, run twice: acks=all lost" in findings.read_text()


def test_one_seed_of_two_scenarios_is_not_one_seed_run_twice(tmp_path: Path) -> None:
    root, findings, readme, run = make_bundle(tmp_path)
    other = make_passing(tmp_path / "runs" / "20261120-020000-isolate-leader-bbbb", scenario="isolate-leader")
    bundle_runs([run, other], root / "thing", [])
    write_documents([load_bundle(root / "thing")], findings, readme)
    text = findings.read_text()
    assert "(seed 7 (twice))" in text  # two runs of seed 7
    assert "run twice" not in text  # but two fault schedules


def test_a_run_not_yet_checked_bundles_nothing(tmp_path: Path) -> None:
    root, _, _, run = make_bundle(tmp_path)
    unchecked = make_passing(tmp_path / "runs" / "20261120-020000-leader-kill-cccc")
    (unchecked / "check" / "result.json").unlink()
    with pytest.raises(HarnessError, match=r"has not been checked yet"):
        bundle_runs([run, unchecked], root / "thing", [])
    assert not (root / "thing" / "evidence").exists()


@pytest.mark.parametrize(
    "source", ["docs/findings/power-loss-leader.yaml", "/work/checkout/docs/findings/power-loss-leader.yaml"]
)
def test_a_findings_scenario_is_named_by_its_repository_path_whether_run_by_a_relative_or_absolute_one(
    tmp_path: Path, source: str
) -> None:
    root, _, _, run = make_bundle(tmp_path)
    data = json.loads((run / "run.json").read_text())
    data["scenario_source"] = source
    (run / "run.json").write_text(json.dumps(data))
    bundle_runs([run], root / "thing", [])
    assert load_bundle(root / "thing").runs[0].scenario == "docs/findings/power-loss-leader.yaml"


def _with_java_client(run: Path, version: str) -> Path:
    data = json.loads((run / "run.json").read_text())
    data["client"] = {"library": "kafka-clients", "version": version, "java": 'openjdk version "17"'}
    (run / "run.json").write_text(json.dumps(data))
    return run


def test_runs_of_two_clients_are_told_apart_and_reproduced_with_their_client(tmp_path: Path) -> None:
    root, findings, readme, run = make_bundle(tmp_path)
    (root / "thing" / "finding.yaml").write_text(
        FINDING_YAML.replace(
            "of: acks.all.acked}",
            'of: acks.all.acked}\n  - {say: "Java: acks=all lost", count: acks.all.lost, clients: [java]}',
        )
    )
    release = json.loads((run / "run.json").read_text())["kafka"]["version"]
    same = _with_java_client(make_passing(tmp_path / "runs" / "20261120-020000-leader-kill-bbbb"), release)
    other = _with_java_client(make_passing(tmp_path / "runs" / "20261120-030000-leader-kill-cccc"), "3.9.1")
    bundle_runs([run, same, other], root / "thing", [])
    bundle = load_bundle(root / "thing")
    write_documents([bundle], findings, readme)
    counts = (root / "thing" / COUNTS).read_text()
    assert "| run | release | client | seed |" in counts
    assert f"| {release} | kafka-clients {release} | 7 |" in counts
    # the Java count is not the librdkafka run's: its cell is empty there
    librdkafka_row = next(line for line in counts.splitlines() if run.name in line)
    assert librdkafka_row.split("|")[7].strip() == ""
    assert f"kchaos run leader-kill --kafka {release} --seed 7\n" in counts
    assert f"kchaos run leader-kill --kafka {release} --client java --seed 7\n" in counts
    assert f"kchaos run leader-kill --kafka {release} --client java:3.9.1 --seed 7\n" in counts
    text = findings.read_text()
    assert "run twice" not in text  # one seed of three clients, not one run repeated
    # a hit among runs of one seed says which client's run it was
    assert re.search(
        r"acks=all lost in 1 of 3 runs \(seed 7 \(three times\)\): [\d,]+ of [\d,]+ \(seed 7, librdkafka ",
        text,
    )


def test_a_count_limited_to_an_unknown_client_is_an_error_naming_the_field(tmp_path: Path) -> None:
    path = tmp_path / "finding.yaml"
    path.write_text(FINDING_YAML.replace("of: acks.all.acked}", "of: acks.all.acked, clients: [jvm]}"))
    with pytest.raises(ConfigError, match=r"counts\[0\]\.clients: unknown client\(s\) jvm"):
        read_finding(path)
