"""Benchmark: scoring 100,000 recorded runs, evalgate vs a plain Python loop (the floor).

All run as whole processes on the same JSONL, with the same four checks: gates `called_tool`
and `no_tool_errors`, scorers `includes` (with a threshold) and `similarity`. The floor is the
fastest plain way to do it by hand: one dict-based loop, no results file; `floor --output` is the
same loop writing each scored item as a JSON line, for scale beside `evalgate --output`. evalgate
runs without and with `--output` (the results JSON and its journal); `evalgate validate` (reading
and validating the data, no checks) shows what of that is loading. Prints the median times, the ratio to the floor
and the peak RSS. evalgate's bytecode is compiled first, as an install leaves it
(bench/installed.py). Targets: <= 2x the floor with `--output`, <= 250 MB.

    python bench/scoring.py [--items 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from installed import compile_evalgate

CITIES = ["Brooklyn", "Paris", "Tokyo", "London", "Cairo", "Oslo", "Lima", "Sydney"]
SKIES = ["sunny", "cloudy", "humid", "rainy", "clear", "snowy", "overcast", "windy"]

SPEC = """\
version: 1
name: bench-scoring
data: runs.jsonl
target: {type: recorded}
gates:
  - type: called_tool
    tool: get_weather
  - type: no_tool_errors
scorers:
  - type: includes
    value: Brooklyn
    threshold: 0.1
  - type: similarity
    value: "It is sunny in Brooklyn, 72F."
"""

DICE = textwrap.dedent(
    """\
    import json, os, re, sys

    WS = re.compile(r"\\s+")

    def dice(a, b):
        a = WS.sub("", a); b = WS.sub("", b)
        if a == b: return 1.0
        if len(a) < 2 or len(b) < 2: return 0.0
        first = {}
        for i in range(len(a) - 1):
            g = a[i:i + 2]
            first[g] = first.get(g, 0) + 1
        shared = 0
        for i in range(len(b) - 1):
            g = b[i:i + 2]
            c = first.get(g, 0)
            if c > 0:
                first[g] = c - 1; shared += 1
        return 2.0 * shared / (len(a) + len(b) - 2)

    target = "it is sunny in brooklyn, 72f."
    """
)

FLOOR = DICE + textwrap.dedent(
    """\
    sums = [0.0, 0.0, 0.0, 0.0]; n = 0
    with open(sys.argv[1], encoding="utf-8") as f:
        for line in f:
            item = json.loads(line)
            out = item["output"]; text = out["text"]; calls = out.get("tool_calls") or []
            lower = text.lower()
            sums[0] += 1.0 if any(c["name"] == "get_weather" for c in calls) else 0.0
            sums[1] += 0.0 if any(c.get("error") or c.get("status") in ("error", "pending") for c in calls) else 1.0
            sums[2] += 1.0 if "brooklyn" in lower else 0.0
            sums[3] += dice(lower, target)
            n += 1
    print(json.dumps([s / n for s in sums]))
    """
)

# The same job writing what the results file holds: each item with its index, gates and scores as one
# JSON line, synced to disk at the end (evalgate syncs its results file too).
FLOOR_OUTPUT = DICE + textwrap.dedent(
    """\
    sums = [0.0, 0.0, 0.0, 0.0]; n = 0
    with open(sys.argv[1], encoding="utf-8") as f, open(sys.argv[2], "w", encoding="utf-8") as results:
        for line in f:
            item = json.loads(line)
            out = item["output"]; text = out["text"]; calls = out.get("tool_calls") or []
            lower = text.lower()
            g0 = 1.0 if any(c["name"] == "get_weather" for c in calls) else 0.0
            g1 = 0.0 if any(c.get("error") or c.get("status") in ("error", "pending") for c in calls) else 1.0
            s2 = 1.0 if "brooklyn" in lower else 0.0
            s3 = dice(lower, target)
            sums[0] += g0; sums[1] += g1; sums[2] += s2; sums[3] += s3
            item = {"index": n, **item, "gates": {"called_tool:get_weather": g0, "no_tool_errors": g1},
                    "scores": {"includes:Brooklyn": s2, "similarity:It is sunny in Brooklyn, 72F.": s3}}
            results.write(json.dumps(item) + "\\n")
            n += 1
        results.flush()
        os.fsync(results.fileno())
    print(json.dumps([s / n for s in sums]))
    """
)


def make_data(path: Path, items: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as handle:
        for i in range(items):
            k = rng.randrange(len(CITIES))
            city, sky, temp = CITIES[k], SKIES[k], rng.randint(30, 99)
            calls = [] if rng.random() < 0.03 else [{"name": "get_weather", "args": {"city": city},
                                                     "result": {"temp_f": temp, "sky": sky}}]
            if calls and rng.random() < 0.02:
                calls[0]["error"] = "upstream timeout"
            record = {
                "id": f"q{i}",
                "input": f"What is the weather in {city}?",
                "output": {"text": f"It is {sky} in {city}, {temp}F.", "tool_calls": calls},
            }
            handle.write(json.dumps(record) + "\n")


def timed(argv: list[str], cwd: Path) -> tuple[float, float, float, str]:
    """(wall seconds, CPU seconds, peak RSS in MB, stdout) of one whole process."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stdout = proc.stdout.read() if proc.stdout else ""
    stderr = proc.stderr.read() if proc.stderr else ""
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{argv} failed ({proc.returncode}):\n{stderr}")
    return elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0, stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3, help="median of N runs each")
    args = parser.parse_args()
    compile_evalgate()
    evalgate = [sys.executable, "-m", "evalgate.cli", "run", "spec.yaml"]
    with tempfile.TemporaryDirectory(prefix="evalgate-bench-") as tmp:
        work = Path(tmp)
        make_data(work / "runs.jsonl", args.items)
        (work / "spec.yaml").write_text(SPEC)
        (work / "floor.py").write_text(FLOOR)
        (work / "floor_output.py").write_text(FLOOR_OUTPUT)
        rows: dict[str, list[tuple[float, float, float]]] = {
            "floor": [], "floor --output": [], "evalgate validate": [], "evalgate": [], "evalgate --output": []}
        for _ in range(args.repeat):  # interleaved, so machine noise hits all alike
            rows["floor"].append(timed([sys.executable, "floor.py", "runs.jsonl"], work)[:3])
            rows["floor --output"].append(timed([sys.executable, "floor_output.py", "runs.jsonl", "floor.jsonl"],
                                                work)[:3])
            # reading and validating alone: what the run spends before any check
            rows["evalgate validate"].append(timed([*evalgate[:3], "validate", "spec.yaml"], work)[:3])
            rows["evalgate"].append(timed(evalgate, work)[:3])
            rows["evalgate --output"].append(timed([*evalgate, "--output", "results.json"], work)[:3])
        results = json.loads((work / "results.json").read_text())
        assert results["summary"]["total_items"] == args.items, "evalgate did not score every item"
        assert len(results["items"]) == args.items, "the results file lacks items"
        work_size = (work / "results.json").stat().st_size
    floor_wall = statistics.median(t for t, _, _ in rows["floor"])
    floor_cpu = statistics.median(c for _, c, _ in rows["floor"])
    print(f"bench/scoring.py: {args.items:,} recorded runs, 2 gates + 2 scorers, median of {args.repeat}"
          f" (results file {work_size / 1e6:.0f} MB)")
    print(f"{'':20}{'wall s':>8}{'x floor':>9}{'CPU s':>8}{'x floor':>9}{'items/s':>10}{'peak RSS':>11}")
    ratios: dict[str, tuple[float, float]] = {}
    for name, runs in rows.items():
        wall = statistics.median(t for t, _, _ in runs)
        cpu = statistics.median(c for _, c, _ in runs)
        rss = max(r for _, _, r in runs)
        ratios[name] = (wall / floor_wall, cpu / floor_cpu)
        print(f"{name:20}{wall:8.2f}{ratios[name][0]:9.2f}{cpu:8.2f}{ratios[name][1]:9.2f}"
              f"{args.items / wall:10,.0f}{rss:8.0f} MB")
    wall_x, cpu_x = ratios["evalgate --output"]
    by_hand = ratios["floor --output"]
    print(f"evalgate --output vs floor --output (the same loop writing each scored item): "
          f"{wall_x / by_hand[0]:.2f}x wall, {cpu_x / by_hand[1]:.2f}x CPU")
    peak = max(r for k in ("evalgate", "evalgate --output") for _, _, r in rows[k])
    verdict = "meets" if max(wall_x, cpu_x) <= 2.0 and peak <= 250 else "MISSES"
    print(f"target <= 2.00x floor with --output and <= 250 MB: {verdict} "
          f"(with --output {wall_x:.2f}x wall, {cpu_x:.2f}x CPU; without {ratios['evalgate'][0]:.2f}x wall; "
          f"{peak:.0f} MB)")


if __name__ == "__main__":
    main()
