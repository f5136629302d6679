"""A run directory is data: `kchaos report` never writes outside it, and the index never links a
run's name as anything but a relative path to its report."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest
from linked import LINK_REFUSED, make_outside, untouched
from report_runs import make_passing
from reportpage import parse

from kchaos.cli import main

HOSTILE_NAMES = [
    "javascript:alert(document.domain)",
    "JaVaScRiPt:alert(1)",
    "data:text%2Fhtml,<script>alert(1)<%2Fscript>",
    "?x=1#frag",
    "%2e%2e",
    'a"><img src=x onerror=alert(1)>',
    os.fsdecode(b"caf\xe9"),  # not UTF-8: the link keeps its bytes
]


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    return make_outside(tmp_path)


def kchaos_report(capfd: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["report", *args])
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err
    return code, (out + err).strip()


def test_hostile_run_names_link_only_to_their_reports(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    for name in HOSTILE_NAMES:
        make_passing(runs / name)
    code, text = kchaos_report(capfd, "--index", str(runs))
    assert code == 0, text
    index = runs / "index.html"
    page = parse(index.read_text(encoding="utf-8"))
    hrefs = [a.attrs["href"] for a in page.find("a")]
    assert len(hrefs) == len(HOSTILE_NAMES)
    assert len(page.find("script")) == 2 and not page.find("img")  # the page's own scripts only
    resolved = set()
    for href in hrefs:
        assert href.startswith("./") and not urlsplit(href).scheme and not urlsplit(href).netloc, href
        # As a browser follows it from the index page: to the report of the run of that name.
        url = urlsplit(urljoin(index.as_uri(), href))
        assert (url.scheme, url.query, url.fragment) == ("file", "", "")
        target = Path(unquote(url.path, errors="surrogateescape"))  # the file's bytes, as on Linux
        assert target.is_file() and target.parent.parent.parent == runs
        resolved.add(target.parent.parent.name)
    assert resolved == set(HOSTILE_NAMES)
    shown = {r.attrs["data-run-id"] for r in page.find("tr", "run")}
    assert "javascript:alert(document.domain)" in shown and "caf?" in shown  # text, escaped


def test_report_refuses_a_linked_report_file(
    tmp_path: Path, outside: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    run = make_passing(tmp_path / "run")
    (run / "report").mkdir(exist_ok=True)
    (run / "report/index.html").symlink_to(outside / "index.html")
    code, text = kchaos_report(capfd, str(run))
    assert (code, text) == (2, f"error: {run / 'report/index.html'}: {LINK_REFUSED}")
    assert untouched(outside)


def test_report_refuses_a_linked_report_directory(
    tmp_path: Path, outside: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    run = make_passing(tmp_path / "run")
    (run / "report").symlink_to(outside)
    code, text = kchaos_report(capfd, str(run))
    assert (code, text) == (2, f"error: {run / 'report'}: {LINK_REFUSED}")
    assert untouched(outside)  # no junit.xml, summary.json


def test_index_page_is_not_written_through_a_link(
    tmp_path: Path, outside: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    make_passing(runs / "n1")
    (runs / "index.html").symlink_to(outside / "index.html")
    code, text = kchaos_report(capfd, "--index", str(runs))
    assert (code, text) == (2, f"error: {runs / 'index.html'}: {LINK_REFUSED}")
    assert untouched(outside)


def test_index_lists_unreadable_runs_and_still_exits_0(
    tmp_path: Path, outside: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    make_passing(runs / "good")
    (make_passing(runs / "not-utf8") / "run.json").write_bytes(b'{"format": 1, "scenario": "\xff"}')
    linked_report = make_passing(runs / "linked-report")
    (linked_report / "report").symlink_to(outside)
    future = (linked_report / "check/result.json").stat().st_mtime + 3600
    os.utime(outside / "index.html", (future, future))  # looks up to date: still not followed
    make_passing(tmp_path / "elsewhere")
    (runs / "linked-run").symlink_to(tmp_path / "elsewhere")
    (make_passing(runs / "no-run-json") / "run.json").unlink()  # its history/ says it is a run
    (runs / "not-a-run").mkdir()
    code, text = kchaos_report(capfd, "--index", str(runs))
    assert (code, text) == (0, str(runs / "index.html"))
    page = parse((runs / "index.html").read_text(encoding="utf-8"))
    rows = {r.attrs["data-run-id"]: r for r in page.find("tr", "run")}
    assert {name: row.attrs["data-status"] for name, row in rows.items()} == {
        "good": "pass",
        "not-utf8": "error",
        "linked-report": "error",
        "linked-run": "error",
        "no-run-json": "error",
    }
    # Unreadable is not failing: no run here broke a promise.
    assert "".join(page.find("h1")[0].text).endswith("5 runs, 0 failing, 4 unreadable")
    reasons = {"".join(e.text) for e in page.find("span", "help")}
    assert f"{runs / 'not-utf8/run.json'}:1: not UTF-8 (byte 0xff)" in reasons
    assert f"{runs / 'linked-report/report'}: {LINK_REFUSED}" in reasons
    assert f"{runs / 'linked-run'}: a symbolic link, not followed by the index" in reasons
    assert f"{runs / 'no-run-json/run.json'}: missing run.json (every run directory has one)" in reasons
    assert untouched(outside)
    assert not (tmp_path / "elsewhere/report/index.html").exists()
    assert [a.attrs["href"] for a in page.find("a")] == ["./good/report/index.html"]
