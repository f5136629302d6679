"""A screenshot of a run's report for the README: the top of RUN/report/index.html, 1280 px wide.

    .venv/bin/python scripts/report_screenshot.py [RUN_DIR] [--out docs/images/report.png] [--height 1600]

RUN_DIR defaults to the newest run directory under runs/ (the one whose run.json changed last). The
report is rendered first when RUN_DIR has none (`reports.write_report`, which needs check/result.json).
Headless Chromium (/usr/bin/chromium, else chromium on PATH) takes the picture with `FLAGS`
(headless, no background traffic) and a fresh profile. A picture over --max-kb is re-encoded with a
palette by ImageMagick's `convert` when it is installed.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from reports import write_report

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "runs"
DEFAULT_OUT = ROOT / "docs" / "images" / "report.png"
CHROMIUM = Path("/usr/bin/chromium")
WIDTH, HEIGHT = 1280, 1600
MAX_KB = 400

FLAGS = [  # headless and offline (tests/reports/test_browser.py runs with them too)
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


class ScreenshotError(Exception):
    """Why no screenshot was taken, in one line."""


def newest_run(runs: Path) -> Path:
    """The run directory under `runs` (at any depth) whose run.json was written last."""
    candidates = list(runs.rglob("run.json")) if runs.is_dir() else []
    if not candidates:
        raise ScreenshotError(f"no run directory (with a run.json) under {runs}")
    return max(candidates, key=lambda path: path.stat().st_mtime).parent


def report_page(run_dir: Path) -> Path:
    """RUN/report/index.html, rendered first when missing."""
    page = run_dir / "report" / "index.html"
    if page.is_file():
        return page
    if not (run_dir / "check" / "result.json").is_file():
        raise ScreenshotError(f"{run_dir}: no report and no check/result.json (`kchaos check {run_dir}`)")
    return write_report(run_dir)


def chromium_binary() -> str:
    if CHROMIUM.is_file():
        return str(CHROMIUM)
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        raise ScreenshotError("chromium is not installed (apt-get install -y chromium)")
    return found


def screenshot(page: Path, out: Path, width: int = WIDTH, height: int = HEIGHT) -> Path:
    """A width x height PNG of `page` at `out`, taken by headless Chromium with a fresh profile."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kchaos-shot-") as profile:
        proc = subprocess.run(
            [
                chromium_binary(),
                *FLAGS,
                f"--user-data-dir={profile}",
                f"--screenshot={out}",
                f"--window-size={width},{height}",
                page.resolve().as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    if proc.returncode != 0 or not out.is_file() or out.read_bytes()[:8] != PNG_MAGIC:
        tail = proc.stderr.strip().splitlines()[-5:]
        raise ScreenshotError(f"chromium took no screenshot (exit {proc.returncode}): {' | '.join(tail)}")
    return out


def shrink(png: Path, max_kb: int) -> str | None:
    """Re-encode `png` with a 256-colour palette when it is over `max_kb` and `convert` is installed;
    a note when it stays over `max_kb`, else None. The picture as taken is kept when `convert` fails."""
    if png.stat().st_size <= max_kb * 1024:
        return None
    convert = shutil.which("convert")
    if convert is None:
        return f"over {max_kb} KB, and ImageMagick's convert is not installed to re-encode it"
    smaller = png.with_suffix(".small.png")
    proc = subprocess.run(
        [
            convert,
            str(png),
            "-strip",
            "-colors",
            "256",
            "-define",
            "png:compression-level=9",
            f"PNG8:{smaller}",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode == 0 and smaller.is_file() and smaller.stat().st_size < png.stat().st_size:
        smaller.replace(png)
    smaller.unlink(missing_ok=True)
    if png.stat().st_size > max_kb * 1024:
        why = f": {proc.stderr.strip().splitlines()[-1]}" if proc.returncode and proc.stderr.strip() else ""
        return f"still over {max_kb} KB after `convert` (exit {proc.returncode}){why}"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "run_dir", nargs="?", type=Path, help="a run directory (default: the newest under runs/)"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"the PNG (default: {DEFAULT_OUT})")
    parser.add_argument("--max-kb", type=int, default=MAX_KB, help="re-encode above this size (default: 400)")
    parser.add_argument("--height", type=int, default=HEIGHT, help=f"pixels from the top (default: {HEIGHT})")
    args = parser.parse_args(argv)
    try:
        run_dir: Path = args.run_dir if args.run_dir is not None else newest_run(RUNS)
        out = screenshot(report_page(run_dir), args.out, height=args.height)
        note = shrink(out, args.max_kb)
    except (ScreenshotError, OSError, subprocess.SubprocessError) as error:
        print(f"report_screenshot: {error}", file=sys.stderr)
        return 2
    size_kb = out.stat().st_size / 1024
    print(f"{out} ({WIDTH}x{args.height}, {size_kb:.0f} KB) from {run_dir}")
    if note:
        print(f"report_screenshot: {note}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
