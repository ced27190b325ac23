"""Benchmark: one run of 20,000 recorded items vs 4 shards run one after another plus the merge.

Every step is a whole `evalgate` process on the same JSONL and spec as bench/scoring.py (two gates,
two scorers). Prints each shard's time and peak RSS beside the single run's, then the merge's.
Targets: the merge takes at most 10% of the single run; a shard's memory stays flat (no higher
than the single run's: nothing grows with the items a process sees). For scale, the merge's floor:
the fastest plain way to join the shards by hand (one interpreter that reads the four files, puts
their item lines in data order and writes them as one items array, synced to disk as evalgate
writes; no check that the shards belong together, no scores added, no verdict).

    python bench/shards.py [--items 20000] [--shards 4] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from installed import compile_evalgate
from measured import measured
from scoring import SPEC, make_data

MERGE_WORK = """\
import sys, time
from evalgate.results.merge import merge
started = time.process_time()
merge(sys.argv[1:], "merged-in-process.json")
print(time.process_time() - started)
"""


HAND_MERGE = """\
import os, sys
lines = []
for path in sys.argv[1:]:
    with open(path, "rb") as f:
        data = f.read()
    start = data.index(b'"items": [') + len(b'"items": [')
    lines.extend(data[start:-len(b"]}\\n")].split(b",\\n"))
lines.sort(key=lambda line: int(line[9:line.index(b",", 9)]))  # b'{"index":N,...'
with open("hand-merged.json", "wb") as out:
    out.write(b'{"items": [')
    out.write(b",\\n".join(lines))
    out.write(b"]}\\n")
    out.flush()
    os.fsync(out.fileno())
"""


def merge_work(shards: list[str], cwd: Path) -> float:
    """CPU seconds of the merge itself, imports and interpreter start-up left out."""
    done = subprocess.run([sys.executable, "-c", MERGE_WORK, *shards], cwd=cwd, capture_output=True, text=True,
                          check=True, timeout=600)
    return float(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3, help="median of N runs each")
    args = parser.parse_args()
    compile_evalgate()
    cli = [sys.executable, "-m", "evalgate.cli"]
    n = args.shards
    with tempfile.TemporaryDirectory(prefix="evalgate-bench-") as tmp:
        work = Path(tmp)
        make_data(work / "runs.jsonl", args.items)
        (work / "spec.yaml").write_text(SPEC)
        rows: dict[str, list[tuple[float, float, float]]] = {"single run": []}
        rows.update({f"shard {i}/{n}": [] for i in range(1, n + 1)})
        rows["merge"] = []
        rows["merge floor"] = []
        work_only: list[float] = []
        bare: list[tuple[float, float, float]] = []  # what any click command costs before doing anything
        startup: list[tuple[float, float, float]] = []  # the merge command's own start-up, no file read
        for _ in range(args.repeat):  # interleaved, so machine noise hits all alike
            bare.append(measured([sys.executable, "-c", "import click"], work))
            startup.append(measured([*cli, "merge", "--help"], work))
            rows["single run"].append(measured([*cli, "run", "spec.yaml", "-o", "full.json"], work))
            for i in range(1, n + 1):
                rows[f"shard {i}/{n}"].append(
                    measured([*cli, "run", "spec.yaml", "--shard", f"{i}/{n}", "-o", f"shard-{i}.json"], work))
            shards = [f"shard-{i}.json" for i in range(1, n + 1)]
            rows["merge"].append(measured([*cli, "merge", *shards, "-o", "merged.json"], work))
            rows["merge floor"].append(measured([sys.executable, "-c", HAND_MERGE, *shards], work))
            work_only.append(merge_work(shards, work))
        full = json.loads((work / "full.json").read_text())
        merged = json.loads((work / "merged.json").read_text())
        assert merged["scores"] == full["scores"] and merged["verdict"] == full["verdict"], "the merge differs"
        assert len(merged["items"]) == args.items
        hand = json.loads((work / "hand-merged.json").read_text())["items"]
        assert [i["id"] for i in hand] == [i["id"] for i in merged["items"]], "the hand merge differs"
        sizes = {i: len(json.loads((work / f"shard-{i}.json").read_text())["items"]) for i in range(1, n + 1)}
    median = {name: tuple(statistics.median(r[k] for r in runs) for k in range(3)) for name, runs in rows.items()}
    single_wall, single_cpu, single_rss = median["single run"]
    print(f"bench/shards.py: {args.items:,} recorded runs, 2 gates + 2 scorers, {n} shards, median of {args.repeat}")
    print(f"{'':14}{'items':>8}{'wall s':>8}{'CPU s':>8}{'x single':>10}{'peak RSS':>11}")
    for name, (wall, cpu, rss) in median.items():
        whole = name in ("single run", "merge", "merge floor")
        items = args.items if whole else sizes[int(name.split()[1].split("/")[0])]
        print(f"{name:14}{items:8,}{wall:8.2f}{cpu:8.2f}{cpu / single_cpu:10.2f}{rss:8.0f} MB")
    shard_cpu = sum(median[f"shard {i}/{n}"][1] for i in range(1, n + 1))
    merge_wall, merge_cpu, merge_rss = median["merge"]
    shard_rss = max(median[f"shard {i}/{n}"][2] for i in range(1, n + 1))
    work_cpu = statistics.median(work_only)
    print(f"{n} shards together: {shard_cpu:.2f} CPU s ({shard_cpu / single_cpu:.2f}x the single run); "
          f"+ merge {merge_cpu:.2f} CPU s, of which the merge itself {work_cpu:.2f} CPU s "
          f"({work_cpu / single_cpu:.1%} of the single run; the rest is interpreter and import start-up)")
    floor_wall, floor_cpu, _ = median["merge floor"]
    print(f"merge vs its floor: {merge_wall / floor_wall:.2f}x wall, {merge_cpu / floor_cpu:.2f}x CPU; the floor "
          f"alone is {floor_wall / single_wall:.1%} of the single run's wall time")
    bare_wall = statistics.median(b[0] for b in bare)
    startup_wall = statistics.median(b[0] for b in startup)
    print(f"for scale: an interpreter that only imports click takes {bare_wall:.2f} s wall "
          f"({bare_wall / single_wall:.1%} of the single run); `evalgate merge --help`, the command's start-up "
          f"alone, {startup_wall:.2f} s ({startup_wall / single_wall:.1%})")
    meets_time = merge_cpu <= 0.10 * single_cpu and merge_wall <= 0.10 * single_wall
    meets_memory = shard_rss <= single_rss * 1.05
    print(f"target merge <= 10% of the single run: {'meets' if meets_time else 'MISSES'} "
          f"({merge_wall / single_wall:.1%} wall, {merge_cpu / single_cpu:.1%} CPU); "
          f"memory flat (shard peak <= single run's): {'meets' if meets_memory else 'MISSES'} "
          f"({shard_rss:.0f} MB vs {single_rss:.0f} MB; merge {merge_rss:.0f} MB)")


if __name__ == "__main__":
    main()
