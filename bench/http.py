"""Benchmark: `evalgate run` against an HTTP agent vs a bare client doing the same requests.

1,000 items, a loopback agent server (tests/fake_agent.py, its own process, Nagle disabled) that
waits 20 ms per reply, concurrency 16, a spec with 2 gates + 2 scorers. Both sides are timed as
whole processes (interpreter start-up included), in turn in each round:

- floor: a bare Python client, 16 threads, one keep-alive `http.client` connection per thread,
  sending the same JSON requests and parsing the replies, nothing else;
- urllib3: the same client on urllib3's own pool (`HTTPConnectionPool.urlopen`, 16 threads sharing it),
  nothing else: what a plain urllib3 program pays, printed for reference;
- evalgate: `evalgate run spec.yaml --output results.json` (journal, scoring, verdict, results),
  its requests on urllib3 connections of its own pool, each head made by http.client's request once
  per method, target and headers, the replies read by http.client's reply, a plain head's header
  lines split without the email parser (proxies and CA bundles honoured; none set here);
- one thread (study): the same `evalgate run`, its code unchanged, with its worker threads replaced by
  greenlets on the main thread, each socket that would block parked on one selector
  (bench/one_thread_study.py), printed for reference: the difference from evalgate's line is what its
  threads' turn-taking costs;
- one loop (study): the same `evalgate run` with evalgate's client and transport replaced by a minimal
  exchange, coroutines on one asyncio loop, each reply read by evalgate's reader under its deadline
  (bench/event_loop_study.py, a design study: no limiter, retries, cache lookup, pool or watchdog),
  printed for reference: a floor for an event-loop design.

Each side's wall time and CPU time (user and system, from the child's rusage) are measured per round.
Prints each round, the median of each side, the median per-round ratios of evalgate to the floor (the
figures the targets are about) beside the lowest and highest round's, and the best wall of each; then
the CPU ratio taken apart: each side run on the first item alone (start-up: interpreter, imports,
loading, the results) and what each further item adds past that, and the share of evalgate's that the
one-thread study saves. evalgate's bytecode is compiled first, as an install leaves it
(bench/installed.py). Targets: evalgate's wall <= 1.3x the floor's at the default 1,000 x 16 (mostly
start-up there: importing evalgate, pydantic and the scorer models a spec uses), <= 1.25x at
10,000 x 64; CPU (user + system) within 1.5x of the floor's.
Usage: python bench/http.py [--items 1000] [--delay 0.02] [--concurrency 16] [--rounds 5]
       python bench/http.py --items 10000 --concurrency 64   (the at-scale figure)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from installed import compile_evalgate

ROOT = Path(__file__).resolve().parent.parent
CITIES = ("Brooklyn", "Paris", "Tokyo", "London", "Cairo", "Oslo", "Lima", "Sydney")
TARGET_RATIO = 1.3  # wall, at the default 1,000 x 16 (start-up dominates)
TARGET_RATIO_AT_SCALE = 1.25  # wall, from 10,000 items on
TARGET_CPU_RATIO = 1.5

# The two reference clients share this loop: each thread takes the next body and sends it with its own
# `client()`, made before the threads start (a thread's way to POST one body: (status, reply bytes)).
LOOP = r'''
import json, sys, threading
port, concurrency, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
bodies = [json.dumps({"input": json.loads(line)["input"]}).encode() for line in open(path)]
lock = threading.Lock()
cursor = [0]
def worker(post):
    while True:
        with lock:
            i = cursor[0]
            cursor[0] += 1
        if i >= len(bodies):
            break
        status, data = post(bodies[i])
        assert status == 200, status
        json.loads(data)
threads = [threading.Thread(target=worker, args=(client(),)) for _ in range(concurrency)]
for t in threads: t.start()
for t in threads: t.join()
'''

# The floor: one keep-alive http.client connection per thread.
FLOOR = r'''
import http.client
def client():
    conn = http.client.HTTPConnection("127.0.0.1", port)
    conn.connect()
    conn.sock.setsockopt(6, 1, 1)  # TCP_NODELAY, as requests/urllib3 set it
    headers = {"Content-Type": "application/json"}
    def post(body):
        conn.request("POST", "/agent", body, headers)
        reply = conn.getresponse()
        return reply.status, reply.read()
    return post
''' + LOOP

# The floor's job on urllib3, as a plain urllib3 program does it: one pool shared by the threads. For
# reference only: what urllib3's pool and reply objects cost by themselves.
URLLIB3_FLOOR = r'''
import urllib3
pool = None
def client():
    global pool
    if pool is None:
        pool = urllib3.HTTPConnectionPool("127.0.0.1", port, maxsize=concurrency, retries=False)
    headers = {"Content-Type": "application/json"}
    def post(body):
        reply = pool.urlopen("POST", "/agent", body=body, headers=headers)
        return reply.status, reply.data
    return post
''' + LOOP

SPEC = """version: 1
name: http-bench
data: data.jsonl
target:
  type: http
  url: http://127.0.0.1:{port}/agent
  body: {{input: "{{{{input}}}}"}}
  response:
    text: output.text
    tool_calls: output.tool_calls
    usage: usage
  timeout_s: 10
concurrency: {concurrency}
gates:
  - type: called_tool
    tool: get_weather
  - type: no_tool_errors
scorers:
  - type: includes
    value: "72F"
    threshold: 0.9
  - type: similarity
    value: "It is sunny in Brooklyn, 72F."
"""


def start_server(delay: float) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "fake_agent.py"), "--delay", str(delay)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("PORT "):
        proc.kill()
        raise SystemExit(f"the fake agent did not start: {line!r}")
    return proc, int(line.split()[1])


class Timing:
    """One process run: wall seconds and CPU seconds (user, system) of that child alone."""

    def __init__(self, wall: float, user: float, system: float) -> None:
        self.wall, self.user, self.system = wall, user, system

    @property
    def cpu(self) -> float:
        return self.user + self.system


def timed(argv: list[str], cwd: Path) -> Timing:
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)  # this child's rusage, not the other side's
        elapsed = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode not in (0, 1):
            out.seek(0)
            raise SystemExit(f"{argv[0]} failed ({proc.returncode}):\n{out.read().decode(errors='replace')}")
    return Timing(elapsed, usage.ru_utime, usage.ru_stime)


def median_line(label: str, timings: list[Timing]) -> str:
    med = statistics.median
    return (f"{label:<22}wall median {med(t.wall for t in timings):.3f}s best {min(t.wall for t in timings):.3f}s  "
            f"CPU user {med(t.user for t in timings):.3f}s sys {med(t.system for t in timings):.3f}s "
            f"total {med(t.cpu for t in timings):.3f}s")


def _ratios(runs: list[Timing], floors: list[Timing]) -> str:
    """A side's wall and CPU against the floor's, the median of the rounds' ratios."""
    wall = statistics.median(r.wall / f.wall for r, f in zip(runs, floors, strict=True))
    cpu = statistics.median(r.cpu / f.cpu for r, f in zip(runs, floors, strict=True))
    return f"{wall:.2f}x wall, {cpu:.2f}x CPU"


def split_line(floors: list[Timing], runs: list[Timing], floors_one: list[Timing], runs_one: list[Timing],
               items: int) -> str:
    """The CPU ratio taken apart: each side on the first item alone (interpreter, imports, loading, the
    results), and what each further item adds (the whole run less that, per item), per round."""
    med = statistics.median
    per_item = [((r.cpu - r1.cpu) / (items - 1), (f.cpu - f1.cpu) / (items - 1))
                for r, f, r1, f1 in zip(runs, floors, runs_one, floors_one, strict=True)] if items > 1 else []
    line = (f"CPU on 1 item (start-up): floor {med(t.cpu for t in floors_one):.3f}s, "
            f"evalgate {med(t.cpu for t in runs_one):.3f}s")
    if per_item:
        line += (f"; per further item: floor {med(f for _, f in per_item) * 1e6:.0f} us, evalgate "
                 f"{med(r for r, _ in per_item) * 1e6:.0f} us ({med(r / f for r, f in per_item):.2f}x)")
    return line


def spread(ratios: list[float]) -> str:
    """The rounds' lowest and highest ratio: on a shared machine the same code's median can move by a fifth
    from one run to the next, and a verdict on the median alone reads as firmer than it is."""
    return f"single rounds {ratios[0]:.2f}-{ratios[-1]:.2f}x" if len(ratios) > 1 else "one round"


def threads_line(runs: list[Timing], one_thread: list[Timing], runs_one: list[Timing], items: int) -> str:
    """evalgate's CPU per further item, on its threads and on the one-thread study's greenlets (the same code
    and start-up), medians of the rounds; the threads' turn-taking is the difference, when there is one."""
    med = statistics.median
    rounds = list(zip(runs, one_thread, runs_one, strict=True))
    threaded = med((r.cpu - r1.cpu) / (items - 1) for r, _, r1 in rounds) * 1e6
    green = med((g.cpu - r1.cpu) / (items - 1) for _, g, r1 in rounds) * 1e6
    share = (threaded - green) / threaded
    said = (f"the threads' turn-taking is {share:.0%} of it" if share > 0
            else "the threads' turn-taking costs nothing measurable")
    return f"per further item, evalgate {threaded:.0f} us on threads, {green:.0f} us on one thread: {said}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--delay", type=float, default=0.02)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    compile_evalgate()
    server, port = start_server(args.delay)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            with (work / "data.jsonl").open("w") as handle:
                for i in range(args.items):
                    city = CITIES[i % len(CITIES)]
                    handle.write(json.dumps({"id": f"q{i}", "input": f"What is the weather in {city}? #{i}"}) + "\n")
            (work / "spec.yaml").write_text(SPEC.format(port=port, concurrency=args.concurrency))
            # the first item alone: what each side costs before and after its requests (start-up, results)
            (work / "one.jsonl").write_text((work / "data.jsonl").open().readline())
            (work / "one.yaml").write_text(SPEC.format(port=port, concurrency=args.concurrency)
                                           .replace("data: data.jsonl", "data: one.jsonl"))
            (work / "floor.py").write_text(FLOOR)
            (work / "urllib3_floor.py").write_text(URLLIB3_FLOOR)
            floor_cmd = [sys.executable, "floor.py", str(port), str(args.concurrency), "data.jsonl"]
            urllib3_cmd = [sys.executable, "urllib3_floor.py", str(port), str(args.concurrency), "data.jsonl"]
            evalgate_cmd = [sys.executable, "-m", "evalgate.cli", "run", "spec.yaml", "--output", "results.json"]
            # -P: this folder's http.py must not hide the standard library's `http` from the study
            study_cmd = [sys.executable, "-P", str(ROOT / "bench" / "event_loop_study.py"), "run", "spec.yaml",
                         "--output", "study.json"]
            one_thread_cmd = [sys.executable, "-P", str(ROOT / "bench" / "one_thread_study.py"), "run", "spec.yaml",
                              "--output", "one_thread.json"]
            floor_one = [sys.executable, "floor.py", str(port), str(args.concurrency), "one.jsonl"]
            evalgate_one = [sys.executable, "-m", "evalgate.cli", "run", "one.yaml", "--output", "one.json"]
            timed(floor_cmd, work)  # warm the page cache and the server's threads
            floors: list[Timing] = []
            plain_urllib3: list[Timing] = []
            runs: list[Timing] = []
            studies: list[Timing] = []
            one_thread: list[Timing] = []
            floors_one: list[Timing] = []
            runs_one: list[Timing] = []
            for round_no in range(1, args.rounds + 1):
                floors.append(timed(floor_cmd, work))
                plain_urllib3.append(timed(urllib3_cmd, work))
                runs.append(timed(evalgate_cmd, work))
                studies.append(timed(study_cmd, work))
                one_thread.append(timed(one_thread_cmd, work))
                floors_one.append(timed(floor_one, work))
                runs_one.append(timed(evalgate_one, work))
                f, u, r = floors[-1], plain_urllib3[-1], runs[-1]
                print(f"round {round_no}: floor {f.wall:.3f}s (cpu {f.user:.2f}u+{f.system:.2f}s)  "
                      f"urllib3 {u.wall:.3f}s (cpu {u.user:.2f}u+{u.system:.2f}s)  "
                      f"evalgate {r.wall:.3f}s (cpu {r.user:.2f}u+{r.system:.2f}s)  "
                      f"wall {r.wall / f.wall:.2f}x cpu {r.cpu / f.cpu:.2f}x", flush=True)
            for name in ("results.json", "study.json", "one_thread.json"):
                summary = json.loads((work / name).read_text())["summary"]
                assert summary["total_items"] == args.items and summary["errored_items"] == 0, (name, summary)
    finally:
        server.kill()
        server.wait()
    # per round: the two sides ran back to back, so drift in the machine's load cancels
    wall_ratios = sorted(r.wall / f.wall for r, f in zip(runs, floors, strict=True))
    cpu_ratios = sorted(r.cpu / f.cpu for r, f in zip(runs, floors, strict=True))
    ratio, cpu_ratio = statistics.median(wall_ratios), statistics.median(cpu_ratios)
    target = TARGET_RATIO_AT_SCALE if args.items >= 10_000 else TARGET_RATIO
    ideal = args.items / args.concurrency * args.delay
    print(f"{args.items} items, {args.delay * 1000:g} ms per reply, concurrency {args.concurrency} "
          f"(ideal wait {ideal:.2f}s), {len(runs)} interleaved rounds")
    print(median_line("floor (bare client):", floors))
    print(median_line("urllib3 alone:", plain_urllib3) + "  (reference: "
          f"{statistics.median(u.wall / f.wall for u, f in zip(plain_urllib3, floors, strict=True)):.2f}x wall, "
          f"{statistics.median(u.cpu / f.cpu for u, f in zip(plain_urllib3, floors, strict=True)):.2f}x CPU)")
    print(median_line("evalgate run:", runs))
    print(median_line("one thread (study):", one_thread) + "  (evalgate's code unchanged, its workers greenlets: "
          f"{_ratios(one_thread, floors)})")
    print(median_line("one loop (study):", studies) + "  (a minimal asyncio exchange for evalgate's client: "
          f"{_ratios(studies, floors)})")
    print(f"wall ratio: {ratio:.2f}x median of rounds ({spread(wall_ratios)}; target <= {target}x) "
          f"{'OK' if ratio <= target else 'MISSED'}; best-of ratio "
          f"{min(r.wall for r in runs) / min(f.wall for f in floors):.2f}x")
    print(f"CPU ratio (user+sys): {cpu_ratio:.2f}x median of rounds ({spread(cpu_ratios)}; "
          f"target <= {TARGET_CPU_RATIO}x) {'OK' if cpu_ratio <= TARGET_CPU_RATIO else 'MISSED'}")
    print(split_line(floors, runs, floors_one, runs_one, args.items))
    if args.items > 1:
        print(threads_line(runs, one_thread, runs_one, args.items))

if __name__ == "__main__":
    main()
