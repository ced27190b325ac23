"""Benchmark: the HTML report's size and the time headless Chromium takes to open it, at 1k, 10k, 100k items.

Real runs: the recorded items of bench/scoring.py (two gates, two scorers), a base run and a head run
of other data compared with it (so items flip and the base's records travel in the results), then
`evalgate report head.json --format html`. The page is opened from file:// in Debian's Chromium
(Playwright's driver, `executable_path`), timed from navigation start to the page's `data-ready`
mark (its data parsed, the first page of items drawn), the median of --repeat openings.
Targets: under 3 s and under 50 MB at 100,000 items.

    python bench/html_report.py [--items 1000 10000 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scoring import SPEC, make_data

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def evalgate(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    done = subprocess.run([sys.executable, "-m", "evalgate.cli", *args], cwd=cwd, capture_output=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, check=False)
    if done.returncode not in (0, 1):
        raise SystemExit(f"evalgate {args} failed ({done.returncode}): {done.stderr.decode()[-2000:]}")
    return done


def page_for(items: int, folder: Path) -> Path:
    """head.html: the report of a head run compared with a base run, `items` items each."""
    (folder / "evalgate.yaml").write_text(SPEC, encoding="utf-8")
    make_data(folder / "runs.jsonl", items, seed=7)
    evalgate("run", "--no-save", "-o", "base.json", cwd=folder)
    make_data(folder / "runs.jsonl", items, seed=8)
    evalgate("run", "--no-save", "-o", "head.json", "--baseline", "base.json", cwd=folder)
    started = time.perf_counter()
    page = evalgate("report", "head.json", "--format", "html", cwd=folder).stdout
    print(f"  {items} items: rendered in {time.perf_counter() - started:.2f} s (the whole process)")
    (folder / "head.html").write_bytes(page)
    return folder / "head.html"


def open_times(page: Path, repeat: int) -> list[float]:
    from playwright.sync_api import sync_playwright

    times = []
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        for _ in range(repeat):
            tab = browser.new_page()
            tab.goto(page.as_uri(), timeout=60_000)
            tab.wait_for_selector("body[data-ready='1']", timeout=60_000)
            # the page's own mark: navigation start to its data parsed and first page of items drawn
            times.append(tab.evaluate("performance.getEntriesByName('evalgate-ready')[0].startTime") / 1000.0)
            tab.close()
        browser.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for items in args.items:
            folder = Path(tmp) / str(items)
            folder.mkdir()
            page = page_for(items, folder)
            times = open_times(page, args.repeat)
            rows.append((items, page.stat().st_size / 1e6, statistics.median(times), max(times)))
    print(f"{'items':>8} {'size MB':>9} {'open s (median)':>16} {'open s (max)':>13}")
    for items, size, median, worst in rows:
        print(f"{items:>8} {size:>9.2f} {median:>16.2f} {worst:>13.2f}")


if __name__ == "__main__":
    main()
