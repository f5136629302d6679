"""The report in a real browser: headless Chromium renders it from disk without script errors."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest
from report_runs import make_failing, make_plain_run, make_transaction_run

from contract.expectation_outcomes import ExpectationOutcome, write_expectations
from reports import write_index, write_report
from scripts.report_screenshot import FLAGS

pytestmark = pytest.mark.browser
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def chromium(tmp_path: Path, *args: str) -> str:
    if CHROMIUM is None:
        pytest.skip(
            "chromium is not installed (apt-get install -y chromium; listed in scripts/apt-packages.txt)"
        )
    profile = tmp_path / "profile"
    proc = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def root_tag(tmp_path: Path, page: Path) -> str:
    """The <html> start tag of the page's DOM after its scripts ran (where the markers are set)."""
    dom = chromium(tmp_path, "--dump-dom", page.as_uri())
    match = re.search(r"<html[^>]*>", dom)
    assert match, dom[:500]
    return match.group(0)


MEASURE = (
    "<script>var root = document.documentElement;"
    'root.setAttribute("data-scroll-width", root.scrollWidth);'
    'root.setAttribute("data-client-width", root.clientWidth);</script>'
)
"""Appended to a copy of a page: the document's width with its overflow, and the viewport's."""


def widths(tmp_path: Path, page: Path, width: int = 1280) -> tuple[int, int]:
    """(scrollWidth, clientWidth) of the page's document laid out in a `width` px wide window: a
    horizontal scroll bar shows exactly when the first is larger."""
    measured = page.with_name(f"measured-{page.name}")
    measured.write_text(page.read_text(encoding="utf-8").replace("</body>", MEASURE + "</body>"))
    dom = chromium(tmp_path, f"--window-size={width},1000", "--dump-dom", measured.as_uri())
    root = re.search(r'<html[^>]* data-scroll-width="(\d+)" data-client-width="(\d+)"', dom)
    assert root, dom[:500]
    return int(root.group(1)), int(root.group(2))


def png_size_and_pixels(path: Path) -> tuple[int, int, bytes]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    idat, pos = b"", 8
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        if data[pos + 4 : pos + 8] == b"IDAT":
            idat += data[pos + 8 : pos + 8 + length]
        pos += 12 + length
    return width, height, zlib.decompress(idat)


def test_report_renders_in_chromium_without_script_errors(failing_run: Path, tmp_path: Path) -> None:
    page = write_report(failing_run)
    root = root_tag(tmp_path, page)
    assert 'data-js-ready="1"' in root  # the page script ran to its end
    assert "data-js-errors" not in root  # and window.onerror recorded nothing

    shot = tmp_path / "report.png"
    chromium(tmp_path, f"--screenshot={shot}", "--window-size=1400,3000", page.as_uri())
    width, height, pixels = png_size_and_pixels(shot)
    assert (width, height) == (1400, 3000)
    assert shot.stat().st_size > 50_000
    assert len(set(pixels[: 1400 * 4 * 600])) > 64  # not a blank page: the banner, tables and charts
    keep = Path(__file__).parents[2] / ".cache" / "report-screenshot.png"
    keep.parent.mkdir(exist_ok=True)
    shutil.copyfile(shot, keep)  # for people to look at (.cache/ is ignored by git)


def test_error_recorder_catches_script_errors(passing_run: Path, tmp_path: Path) -> None:
    page = write_report(passing_run)
    page.write_text(page.read_text().replace("</body>", "<script>notDefinedAnywhere();</script></body>"))
    assert 'data-js-errors="1"' in root_tag(tmp_path, page)


def test_index_renders_in_chromium(passing_run: Path, tmp_path: Path) -> None:
    index = write_index(passing_run.parent)
    root = root_tag(tmp_path, index)
    assert 'data-js-ready="1"' in root and "data-js-errors" not in root


def test_the_consumer_section_renders_in_chromium(failing_run: Path, tmp_path: Path) -> None:
    page = write_report(failing_run)
    dom = chromium(tmp_path, "--dump-dom", page.as_uri())
    root = re.search(r"<html[^>]*>", dom)
    assert root and 'data-js-ready="1"' in root.group(0) and "data-js-errors" not in root.group(0)
    section = dom[dom.index('id="consumer-groups"') : dom.index('class="timeline"')]
    assert 'class="group-score" data-group="g-alo"' in section
    assert 'data-count="skipped" data-value="2"' in section
    assert section.count('class="example"') == 2  # the two skipped records, with their commit
    lane = dom[dom.index('aria-label="records processed per second by each consumer group"') :]
    assert lane.count('class="rebalance g0"') == 2 and lane.count('class="commit-failed"') == 1


def test_the_verdict_box_names_what_broke_first(failing_run: Path, tmp_path: Path) -> None:
    held = ExpectationOutcome("acks=all lost == 0", "held", 0)
    write_expectations(failing_run, [held, ExpectationOutcome("unexpected == 0", "failed", 2)])
    page = write_report(failing_run)
    dom = chromium(tmp_path, "--dump-dom", page.as_uri())
    box = dom[dom.index('id="verdict"') : dom.index('id="completeness"')]
    broke = re.findall(r'<li data-id="([^"]+)" data-where="([^"]*)" data-verdict="violated">', box)
    assert ("no-phantom-writes", "chaos-acks-1") in broke and ("no-unexpected-values", "") in broke
    assert box.index('id="broke"') < box.index('id="expectations"')  # what broke before the expectations
    verdicts = re.findall(r'<li data-verdict="(\w+)">expect', box)
    assert verdicts == sorted(verdicts, key=lambda v: v == "held")  # failed expectations first
    assert "promised by the consumer" in box[box.index('id="broke"') : box.index('id="expectations"')]


@pytest.mark.parametrize("which", ["plain_run", "transaction_run", "failing_run"])
def test_no_horizontal_scroll_at_1280_px(which: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    run: Path = request.getfixturevalue(which)
    scroll, client = widths(tmp_path, write_report(run))
    assert 1200 < client <= 1280 and scroll <= client, (which, scroll, client)


def test_the_index_has_no_horizontal_scroll_at_1280_px(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    make_plain_run(runs / "20261120-030000-leader-kill-0001")
    make_transaction_run(runs / "20261122-030000-txn-pipeline-0001")
    make_failing(runs / "20261121-020000-leader-kill-0002")
    scroll, client = widths(tmp_path, write_index(runs))
    assert 1200 < client <= 1280 and scroll <= client, (scroll, client)


def test_the_measure_sees_a_scroll_bar(passing_run: Path, tmp_path: Path) -> None:
    page = write_report(passing_run)
    page.write_text(page.read_text().replace("</body>", '<div style="width: 1500px">wide</div></body>'))
    scroll, client = widths(tmp_path, page)
    assert scroll >= 1500 > client
