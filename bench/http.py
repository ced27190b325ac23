"""Benchmark: `evalgate run` against an HTTP agent vs a bare client doing the same requests.

1,000 items, a loopback agent server (tests/fake_agent.py, its own process, Nagle disabled) that
waits 20 ms per reply, concurrency 16, a spec with 2 gates + 2 scorers. Both sides are timed as
whole processes (interpreter start-up included), alternately in the same run:

- floor: a bare Python client, 16 threads, one keep-alive `http.client` connection per thread,
  sending the same JSON requests and parsing the replies, nothing else;
- evalgate: `evalgate run spec.yaml --output results.json` (journal, scoring, verdict, results),
  its requests on urllib3 pools (proxies and CA bundles honoured; none set here).

Prints each round, the median of each side, the median per-round ratio (the figure the target
is about) and the best of each. evalgate's bytecode is compiled first, as an install leaves it
(bench/installed.py). Target: evalgate <= 1.3x the floor. Most of evalgate's excess over the floor is start-up
(importing evalgate, pydantic and the scorer models a spec uses), not the network path.
Usage: python bench/http.py [--items 1000] [--delay 0.02] [--concurrency 16] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from installed import compile_evalgate

ROOT = Path(__file__).resolve().parent.parent
CITIES = ("Brooklyn", "Paris", "Tokyo", "London", "Cairo", "Oslo", "Lima", "Sydney")
TARGET_RATIO = 1.3

FLOOR = r'''
import http.client, json, sys, threading
port, concurrency, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
bodies = [json.dumps({"input": json.loads(line)["input"]}).encode() for line in open(path)]
lock = threading.Lock()
cursor = [0]
def worker():
    conn = http.client.HTTPConnection("127.0.0.1", port)
    conn.connect()
    conn.sock.setsockopt(6, 1, 1)  # TCP_NODELAY, as requests/urllib3 set it
    headers = {"Content-Type": "application/json"}
    while True:
        with lock:
            i = cursor[0]
            cursor[0] += 1
        if i >= len(bodies):
            break
        conn.request("POST", "/agent", bodies[i], headers)
        reply = conn.getresponse()
        data = reply.read()
        assert reply.status == 200, reply.status
        json.loads(data)
threads = [threading.Thread(target=worker) for _ in range(concurrency)]
for t in threads: t.start()
for t in threads: t.join()
'''

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


def timed(argv: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{argv[0]} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return elapsed


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
            (work / "floor.py").write_text(FLOOR)
            floor_cmd = [sys.executable, "floor.py", str(port), str(args.concurrency), "data.jsonl"]
            evalgate_cmd = [sys.executable, "-m", "evalgate.cli", "run", "spec.yaml", "--output", "results.json"]
            timed(floor_cmd, work)  # warm the page cache and the server's threads
            floors, runs = [], []
            for round_no in range(1, args.rounds + 1):
                floors.append(timed(floor_cmd, work))
                runs.append(timed(evalgate_cmd, work))
                print(f"round {round_no}: floor {floors[-1]:.3f}s  evalgate {runs[-1]:.3f}s  "
                      f"ratio {runs[-1] / floors[-1]:.2f}x")
            results = json.loads((work / "results.json").read_text())
            summary = results["summary"]
            assert summary["total_items"] == args.items and summary["errored_items"] == 0, summary
    finally:
        server.kill()
        server.wait()
    ratios = [r / f for r, f in zip(runs, floors, strict=True)]
    ratio = statistics.median(ratios)  # per round: the two sides ran back to back, so drift cancels
    ideal = args.items / args.concurrency * args.delay
    print(f"{args.items} items, {args.delay * 1000:g} ms per reply, concurrency {args.concurrency} "
          f"(ideal wait {ideal:.2f}s), {len(runs)} rounds")
    print(f"floor (bare client):  median {statistics.median(floors):.3f}s  best {min(floors):.3f}s")
    print(f"evalgate run:         median {statistics.median(runs):.3f}s  best {min(runs):.3f}s")
    print(f"ratio: {ratio:.2f}x median of rounds (target <= {TARGET_RATIO}x) "
          f"{'OK' if ratio <= TARGET_RATIO else 'MISSED'}; best-of ratio {min(runs) / min(floors):.2f}x")

if __name__ == "__main__":
    main()
